package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Real pods share one network per machine: the bridge over kwok's pod subnet (realPodCIDR)
// and the cluster DNS address (clusterDNSIP) on it. So one sandbox at a time runs them; its
// agent holds this lock (flock: the kernel drops it when the agent dies, however it dies) and
// writes its state folder in it. Another sandbox plays its pods from samples and says why.
var realPodsLockPath = func() string {
	if fi, err := os.Stat("/run"); err == nil && fi.IsDir() {
		return "/run/ain-sandbox-real-pods.lock"
	}
	return filepath.Join(os.TempDir(), "ain-sandbox-real-pods.lock")
}

// lockRealPods takes the lock for the sandbox in dir, trying for up to wait (an agent of the
// same sandbox that is stopping may still hold it). It returns the held file, or, when another
// sandbox holds it, the reason this one runs no real pods.
func lockRealPods(dir string, wait time.Duration) (*os.File, string, error) {
	f, err := os.OpenFile(realPodsLockPath(), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, "", err
	}
	deadline := time.Now().Add(wait)
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, "", fmt.Errorf("locking %s: %w", f.Name(), err)
		}
		if time.Now().After(deadline) {
			holder, _ := os.ReadFile(f.Name())
			f.Close()
			return nil, realPodsBusy(strings.TrimSpace(string(holder)), dir), nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := f.Truncate(0); err != nil {
		f.Close()
		return nil, "", err
	}
	if _, err := f.WriteAt([]byte(dir+"\n"), 0); err != nil {
		f.Close()
		return nil, "", err
	}
	return f, "", nil
}

// envRealPodsLock names the agent's inherited file descriptor of the lock Up took.
const envRealPodsLock = "AIN_SANDBOX_REAL_PODS_LOCK_FD"

// inheritedRealPodsLock is the lock Up took and passed to the agent (envRealPodsLock), kept
// from the agent's own children; without one, the agent takes it itself, waiting a little for
// an agent of the same sandbox that is stopping.
func inheritedRealPodsLock(dir string) (*os.File, string, error) {
	fd, err := strconv.Atoi(os.Getenv(envRealPodsLock))
	if err != nil || fd < 3 {
		return lockRealPods(dir, 10*time.Second)
	}
	os.Unsetenv(envRealPodsLock) // not for CoreDNS and the pods, which inherit the environment
	// The descriptor must be the lock file's, not whatever else has that number.
	var got, want syscall.Stat_t
	if syscall.Fstat(fd, &got) != nil || syscall.Stat(realPodsLockPath(), &want) != nil || got.Dev != want.Dev || got.Ino != want.Ino {
		return nil, "", fmt.Errorf("%s=%d is not the real-pod lock %s", envRealPodsLock, fd, realPodsLockPath())
	}
	syscall.CloseOnExec(fd)
	f := os.NewFile(uintptr(fd), realPodsLockPath())
	// Held already through the shared open file; taking it again on it only confirms that.
	if err := syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, "", fmt.Errorf("the inherited real-pod lock (fd %d): %w", fd, err)
	}
	return f, "", nil
}

// realPodsHolder is why the sandbox in dir cannot run real pods now because another holds the
// lock ("" when none does). The lock is not kept.
func realPodsHolder(dir string) string {
	f, busy, err := lockRealPods(dir, 0)
	if err != nil {
		return "the machine's real-pod lock: " + err.Error()
	}
	if busy != "" {
		return busy
	}
	f.Close()
	return ""
}

func realPodsBusy(holder, dir string) string {
	if holder == dir {
		return fmt.Sprintf("this sandbox's previous agent still holds the machine's real-pod lock (%s): stop it (`ain sandbox down`), then start again", realPodsLockPath())
	}
	if holder == "" {
		holder = "its state folder unknown"
	}
	return fmt.Sprintf("another sandbox on this machine runs real pods (%s); they share one pod network (%s) and cluster DNS (%s), so one sandbox at a time", holder, realPodCIDR, clusterDNSIP)
}
