package trainlog

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Resolve turns a RUN or ARCHIVE argument into the file to read: a file as is; a directory's
// trainer_state.json, else that of its checkpoint-N with the highest N (Trainer writes the state
// into each checkpoint; the output directory itself has one only when the script saves it).
func Resolve(path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if !st.IsDir() {
		return path, nil
	}
	direct := filepath.Join(path, "trainer_state.json")
	if _, err := os.Stat(direct); err == nil {
		return direct, nil
	}
	cps, _ := filepath.Glob(filepath.Join(path, "checkpoint-*", "trainer_state.json"))
	if len(cps) == 0 {
		return "", fmt.Errorf("%s: no trainer_state.json in it or in a checkpoint-N directory: give the training log or the state file", path)
	}
	step := func(p string) int {
		n, _ := strconv.Atoi(strings.TrimPrefix(filepath.Base(filepath.Dir(p)), "checkpoint-"))
		return n
	}
	sort.Slice(cps, func(i, j int) bool { return step(cps[i]) < step(cps[j]) })
	return cps[len(cps)-1], nil
}
