package preflight

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ain-hpc/ain/pkg/lazyre"
)

// The storage probe's output (storageScript prints it) is one record a line, a letter, a space
// and its fields, the path last so that it may hold spaces:
//
//	ain-storage-probe 1        the format's version
//	U 1000 1000                the uid and gid the probe ran as (id -u, id -g)
//	S sandbox                  the probe ran in the ain sandbox (pkg/sandbox sets $AIN_SYSFS_ROOT, pods
//	                           never do): the paths are its simulated volume, sparse files on its disk
//	P model /shared/models/M   a path the recipe names follows, with its kind
//	T d                        its type: d directory, f file, - missing, o other
//	E r 663 config.json        a file in a model directory: r readable (its first block read) or -, size, name
//	I 27752 model.safetensors.index.json   the weights index, its size, then its text, each line "| "-prefixed
//	| {"metadata": ...
//	I-END
//	D r 12                     a dataset directory: listable (r or -), how many entries
//	A /shared/adapters         an output path's nearest existing directory, where the write was tried
//	W ok                       the write test there: ok, or the shell's reason ("Read-only file system")
//	F 1048576 917504           df -Pk of that directory: size and available, in KiB
//	XP /shared/models/M        the read test (Storage.ReadBytes), after every path: of this model
//	X d 1073741824 bytes (1.1 GB, 1.0 GiB) copied, 0.357 s, 3.0 GB/s
//	                           a weight file read: d with O_DIRECT, c through the page cache; then
//	                           dd's summary line
//	XF model-00001-of-00004.safetensors   the file that X line read
//	XT model-00002-of-00004.safetensors   the read of this file was cut at the time budget
//	XN no weight file ...      nothing was read, and why
//	END
const storageFormat = StorageMarker + " 1"

// maxIndexBytes bounds the weights index the probe prints. Index files are small (a 70B model's
// names about 700 tensors in ~60 KB); one larger than this is reported, not checked.
const maxIndexBytes = 16 << 20

// StorageEntry is a file of a model directory.
type StorageEntry struct {
	Name     string
	Readable bool
	Size     int64 // -1: unknown
}

// StoragePath is what the probe found at one path.
type StoragePath struct {
	Kind, Path string
	// Type is d, f, - (missing) or o (neither a file nor a directory).
	Type    string
	Entries []StorageEntry
	// Index is the weights index (IndexName, its size and text) of a model directory.
	IndexName string
	IndexSize int64
	Index     []byte
	// Listable and Count describe a dataset directory.
	Listable bool
	Count    int
	// Ancestor, Write, SizeKB and AvailKB describe an output path: its nearest existing
	// directory, the write test's result there ("ok" or the reason) and that file system's size.
	Ancestor        string
	Write           string
	SizeKB, AvailKB int64
	HasDF           bool
	// Reads are the timed reads of a model directory's weight files (Storage.ReadBytes); Cut is
	// the file whose read the time budget cut, ReadNote why nothing was read.
	Reads         []StorageRead
	Cut, ReadNote string
	ReadTested    bool
}

// StorageRead is one weight file read by the probe's dd.
type StorageRead struct {
	Name    string
	Bytes   int64
	Seconds float64
	// Direct: read with O_DIRECT, so the node's page cache did not serve it.
	Direct bool
	// Summary is dd's summary line as printed; Seconds is 0 when it could not be read from it
	// (a dd built without its transfer-rate line).
	Summary string
}

// ddSummary reads dd's last line: GNU coreutils "1073741824 bytes (1.1 GB, 1.0 GiB) copied,
// 0.357 s, 3.0 GB/s", busybox "1073741824 bytes (1.0GB) copied, 0.356213 seconds, 2.8GB/s"; a
// locale may write the seconds with a decimal comma.
var ddSummary = lazyre.New(`^(\d+) bytes .*copied, (\d+(?:[.,]\d+)?) s`)

// StorageReport is the whole probe output.
type StorageReport struct {
	UID, GID string
	// Sandbox: the probe ran in the ain sandbox, over its simulated volume.
	Sandbox bool
	Paths   []StoragePath
	// Complete: the output ended with END (a probe cut short reports what it reached).
	Complete bool
}

// ParseStorageReport reads the storage probe's output. Lines it does not know are skipped; a
// report without the format line is an error (the probe did not run the script).
func ParseStorageReport(out []byte) (*StorageReport, error) {
	r := &StorageReport{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64*1024), maxIndexBytes+1024)
	var cur *StoragePath
	seen, inIndex := false, false
	for sc.Scan() {
		l := strings.TrimRight(sc.Text(), "\r")
		if inIndex {
			if l == "I-END" {
				inIndex = false
			} else if l == "|" {
				cur.Index = append(cur.Index, '\n')
			} else if rest, ok := strings.CutPrefix(l, "| "); ok {
				cur.Index = append(append(cur.Index, rest...), '\n')
			}
			continue
		}
		if l == storageFormat {
			seen = true
			continue
		}
		if !seen {
			continue
		}
		tag, rest, _ := strings.Cut(l, " ")
		f := strings.Fields(rest)
		switch {
		case tag == "END":
			r.Complete = true
		case tag == "U" && len(f) >= 1:
			r.UID = f[0]
			if len(f) > 1 {
				r.GID = f[1]
			}
		case tag == "S":
			r.Sandbox = true
		case tag == "P" && len(f) >= 2:
			kind, p, _ := strings.Cut(rest, " ")
			r.Paths = append(r.Paths, StoragePath{Kind: kind, Path: p})
			cur = &r.Paths[len(r.Paths)-1]
		case cur == nil:
		case tag == "T" && len(f) == 1:
			cur.Type = f[0]
		case tag == "E" && len(f) >= 3:
			name := strings.SplitN(rest, " ", 3)[2]
			cur.Entries = append(cur.Entries, StorageEntry{Name: name, Readable: f[0] == "r", Size: sizeField(f[1])})
		case tag == "I" && len(f) >= 2:
			cur.IndexSize, cur.IndexName, cur.Index, inIndex = sizeField(f[0]), strings.SplitN(rest, " ", 2)[1], nil, true
		case tag == "D" && len(f) == 2:
			cur.Listable = f[0] == "r"
			cur.Count, _ = strconv.Atoi(f[1])
		case tag == "A":
			cur.Ancestor = rest
		case tag == "W":
			cur.Write = rest
		case tag == "F" && len(f) == 2:
			cur.SizeKB, cur.AvailKB, cur.HasDF = sizeField(f[0]), sizeField(f[1]), true
		case tag == "XP":
			cur = r.Find("model", rest)
			if cur != nil {
				cur.ReadTested = true
			}
		case tag == "XT":
			cur.Cut = rest
		case tag == "XN":
			cur.ReadNote = rest
		case tag == "X" && len(f) >= 1:
			cur.Reads = append(cur.Reads, parseRead(f[0] == "d", strings.TrimSpace(strings.TrimPrefix(rest, f[0]))))
		case tag == "XF" && len(cur.Reads) > 0:
			cur.Reads[len(cur.Reads)-1].Name = rest
		}
	}
	if err := sc.Err(); err != nil {
		return r, fmt.Errorf("reading the storage probe's output: %w", err)
	}
	if !seen {
		return nil, fmt.Errorf("the storage probe printed no %q line: it did not run its script", storageFormat)
	}
	return r, nil
}

func parseRead(direct bool, summary string) StorageRead {
	r := StorageRead{Direct: direct, Summary: summary}
	if m := ddSummary().FindStringSubmatch(summary); m != nil {
		r.Bytes, _ = strconv.ParseInt(m[1], 10, 64)
		r.Seconds, _ = strconv.ParseFloat(strings.Replace(m[2], ",", ".", 1), 64)
	}
	return r
}

func sizeField(s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return -1
	}
	return n
}

// Find returns the report's record of path p of kind, or nil.
func (r *StorageReport) Find(kind, p string) *StoragePath {
	for i := range r.Paths {
		if r.Paths[i].Kind == kind && r.Paths[i].Path == p {
			return &r.Paths[i]
		}
	}
	return nil
}

func (p *StoragePath) entry(name string) *StorageEntry {
	for i := range p.Entries {
		if p.Entries[i].Name == name {
			return &p.Entries[i]
		}
	}
	return nil
}

// lfsPointerMax: a Git LFS pointer file is less than 1024 bytes (git-lfs docs/spec.md, "Pointer
// files must be less than 1024 bytes in size"); a weights file that small is a pointer left by a
// clone without `git lfs pull`, not weights.
const lfsPointerMax = 1024

// tokenizerFiles are the files one of which a Hugging Face tokenizer loads from: the fast
// tokenizer's tokenizer.json, a SentencePiece model (LLaMA's tokenizer.model, T5's spiece.model,
// XLM-R's sentencepiece.bpe.model), a WordPiece vocab.txt, or a GPT-2 style BPE vocab.json (which
// needs its merges.txt beside it: tokenFile checks); Mistral's own format (tekken.json) too.
var tokenizerFiles = []string{"tokenizer.json", "tokenizer.model", "spiece.model", "sentencepiece.bpe.model", "vocab.txt", "vocab.json", "tekken.json"}

// ModelProblems judges a model directory: config.json, a tokenizer file, and the weights (every
// shard the index's weight_map names, or one model.safetensors / pytorch_model.bin), each present,
// readable and not a Git LFS pointer. It returns what is wrong (empty: complete), and a summary
// of what was found.
func ModelProblems(p *StoragePath) (problems []string, found string) {
	switch p.Type {
	case "-":
		return []string{"does not exist"}, ""
	case "d":
	default:
		return []string{"is not a directory"}, ""
	}
	var unreadable []string
	need := func(name string) bool {
		e := p.entry(name)
		if e != nil && !e.Readable {
			unreadable = append(unreadable, name)
		}
		return e != nil
	}
	var have []string
	switch {
	case p.entry("config.json") == nil && p.entry("adapter_config.json") != nil:
		// A PEFT adapter (LoRA): adapter_config.json and its weights; the base model holds the rest.
		need("adapter_config.json")
		have = append(have, "adapter_config.json (a PEFT adapter)")
		for _, w := range []string{"adapter_model.safetensors", "adapter_model.bin"} {
			if need(w) {
				have = append(have, w)
				return append(problems, unreadableProblem(unreadable)...), strings.Join(have, ", ")
			}
		}
		return append(problems, "no adapter weights (adapter_model.safetensors or adapter_model.bin)"), strings.Join(have, ", ")
	case p.entry("config.json") == nil && p.entry("params.json") != nil:
		// Mistral's own format (vLLM --config-format mistral --load-format mistral).
		need("params.json")
		have = append(have, "params.json (Mistral format)")
		if tok := slices.IndexFunc([]string{"tekken.json", "tokenizer.model.v3", "tokenizer.model"}, need); tok < 0 {
			problems = append(problems, "no tokenizer file (tekken.json, tokenizer.model.v3)")
		}
		var weights []string
		for _, e := range p.Entries {
			if strings.HasPrefix(e.Name, "consolidated") && (strings.HasSuffix(e.Name, ".safetensors") || strings.HasSuffix(e.Name, ".pth")) {
				weights = append(weights, e.Name)
				need(e.Name)
			}
		}
		if len(weights) == 0 {
			return append(problems, "no weights: no consolidated*.safetensors"), strings.Join(have, ", ")
		}
		have = append(have, fileList(weights))
		return append(problems, unreadableProblem(unreadable)...), strings.Join(have, ", ")
	case need("config.json"):
		have = append(have, "config.json")
	default:
		problems = append(problems, "config.json is missing")
	}
	if tok := slices.IndexFunc(tokenizerFiles, need); tok < 0 {
		problems = append(problems, "no tokenizer file ("+strings.Join(tokenizerFiles, ", ")+")")
	} else if tokenizerFiles[tok] == "vocab.json" && !need("merges.txt") {
		problems = append(problems, "vocab.json without merges.txt: a BPE tokenizer needs both")
	} else {
		have = append(have, tokenizerFiles[tok])
	}
	shards, total, wp := p.weightFiles()
	if wp != "" {
		problems = append(problems, wp)
	}
	var missing, pointers []string
	for _, s := range shards {
		e := p.entry(s)
		switch {
		case e == nil:
			missing = append(missing, s)
		case !e.Readable:
			unreadable = append(unreadable, s)
		case e.Size >= 0 && e.Size < lfsPointerMax:
			pointers = append(pointers, s)
		}
	}
	if len(missing) > 0 {
		problems = append(problems, fmt.Sprintf("%d of %d weight files missing: %s", len(missing), len(shards), fileList(missing)))
	}
	if len(pointers) > 0 {
		problems = append(problems, fmt.Sprintf("%s under %d bytes: Git LFS pointers, not weights", fileList(pointers), lfsPointerMax))
	}
	problems = append(problems, unreadableProblem(unreadable)...)
	var bytes int64
	for _, s := range shards {
		if e := p.entry(s); e != nil && e.Size > 0 {
			bytes += e.Size
		}
	}
	if total > 0 {
		have = append(have, fmt.Sprintf("%d of %d shards of %s (%s)", len(shards)-len(missing), total, p.IndexName, humanBytes(bytes)))
	} else if len(shards) == 1 {
		have = append(have, fmt.Sprintf("%s (%s)", shards[0], humanBytes(bytes)))
	}
	return problems, strings.Join(have, ", ")
}

// weightFiles returns the weight files the directory needs: the shards its index names (and
// their count), or its single weights file; and a problem when there are none or the index
// cannot be read.
func (p *StoragePath) weightFiles() (files []string, total int, problem string) {
	if p.IndexName != "" {
		if p.IndexSize > maxIndexBytes {
			return nil, 0, fmt.Sprintf("%s is %s, more than the probe reads (%s): its shards were not checked", p.IndexName, humanBytes(p.IndexSize), humanBytes(maxIndexBytes))
		}
		var idx struct {
			WeightMap map[string]string `json:"weight_map"`
		}
		if err := json.Unmarshal(p.Index, &idx); err != nil {
			return nil, 0, fmt.Sprintf("%s is not valid JSON (%v): a partial copy?", p.IndexName, err)
		}
		for _, f := range idx.WeightMap {
			if !slices.Contains(files, f) {
				files = append(files, f)
			}
		}
		if len(files) == 0 {
			return nil, 0, p.IndexName + " has no weight_map entries"
		}
		slices.Sort(files)
		return files, len(files), ""
	}
	for _, single := range []string{"model.safetensors", "pytorch_model.bin"} {
		if p.entry(single) != nil {
			return []string{single}, 0, ""
		}
	}
	return nil, 0, "no weights: neither model.safetensors.index.json nor model.safetensors (nor pytorch_model.bin)"
}

func fileList(s []string) string {
	const show = 6
	if len(s) <= show {
		return strings.Join(s, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(s[:show], ", "), len(s)-show)
}

func humanBytes(n int64) string {
	const unit = 1000
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %cB", float64(n)/float64(div), "kMGTPE"[exp])
}

func unreadableProblem(unreadable []string) []string {
	if len(unreadable) == 0 {
		return nil
	}
	return []string{"not readable: " + fileList(unreadable)}
}
