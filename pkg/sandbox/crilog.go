package sandbox

import (
	"bytes"
	"os"
	"sync"
	"time"
)

// criLog appends a running container's output to its CRI log file as a container runtime
// does: one record per line, "<RFC 3339 time> stdout F <line>", the file only ever growing. A
// reader never meets a file rewritten under it, and a follower (k8s.io/cri-client pkg/logs
// ReadLogs, what kwok serves logs with) reads on from its offset after each write event. A new
// file (a new run, a rotation) is made beside the path and renamed onto it: ReadLogs reopens the
// path on that Create event, where truncating in place would leave a follower past the end. A
// follower more than one rotation behind misses the file in between, as with a kubelet's.
type criLog struct {
	mu      sync.Mutex
	path    string
	f       *os.File
	size    int64  // bytes in the current file
	partial []byte // the start of a line whose end has not come yet
}

// criMaxLine is where a line still without its end is written as "P" records, as containerd
// does past its max_container_log_line_size (16 KiB by default); a reader joins P records up to
// the next F one.
const criMaxLine = 16 << 10

// criMaxFile is the size past which the file is rotated (the old one kept as <path>.1), a
// kubelet's containerLogMaxSize default (10Mi); a kubelet keeps 5 files, this 2.
const criMaxFile = 10 << 20

// criTime is the CRI log's time format (RFC 3339 with nanoseconds, zero-padded: cri-client's
// RFC3339NanoFixed).
const criTime = "2006-01-02T15:04:05.000000000Z07:00"

// criRecord writes one record of a CRI log: "<ts> stdout <tag> <line>\n".
func criRecord(out *bytes.Buffer, ts, tag string, line []byte) {
	out.WriteString(ts)
	out.WriteString(" stdout ")
	out.WriteString(tag)
	out.WriteByte(' ')
	out.Write(line)
	out.WriteByte('\n')
}

// createCRILog creates the log file at path, a new one when one is there (a new run).
func createCRILog(path string) (*criLog, error) {
	c := &criLog{path: path}
	if err := c.newFile(); err != nil {
		return nil, err
	}
	return c, nil
}

// newFile makes an empty file and renames it onto path.
func (c *criLog) newFile() error {
	tmp := c.path + ".new"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, c.path); err != nil {
		f.Close()
		return err
	}
	c.f, c.size = f, 0
	return nil
}

// add writes data's complete lines, time-stamped now, in one write; an incomplete last line
// waits for its end (or for close). cut says that output was lost before data (more than the
// process's log keeps came between two adds): the line waiting is written as it is, not joined
// to data's first.
func (c *criLog) add(data []byte, now time.Time, cut bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.f == nil {
		return os.ErrClosed
	}
	if cut {
		if err := c.write(nil, now, true); err != nil {
			return err
		}
	}
	return c.write(data, now, false)
}

// close writes what is left of an unended line as a full one (the process ended) and closes
// the file.
func (c *criLog) close(now time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.f == nil {
		return nil
	}
	err := c.write(nil, now, true)
	if cerr := c.f.Close(); err == nil {
		err = cerr
	}
	c.f = nil
	return err
}

func (c *criLog) write(data []byte, now time.Time, final bool) error {
	ts := now.UTC().Format(criTime)
	var out bytes.Buffer
	record := func(tag string, line []byte) { criRecord(&out, ts, tag, line) }
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			c.partial = append(c.partial, data...)
			break
		}
		line := data[:i]
		if len(c.partial) > 0 {
			line = append(c.partial, line...)
			c.partial = c.partial[:0]
		}
		for len(line) > criMaxLine {
			record("P", line[:criMaxLine])
			line = line[criMaxLine:]
		}
		record("F", line)
		data = data[i+1:]
	}
	for len(c.partial) > criMaxLine {
		record("P", c.partial[:criMaxLine])
		c.partial = append(c.partial[:0], c.partial[criMaxLine:]...)
	}
	if final && len(c.partial) > 0 {
		record("F", c.partial)
		c.partial = c.partial[:0]
	}
	if out.Len() == 0 {
		return nil
	}
	if c.size > 0 && c.size+int64(out.Len()) > criMaxFile {
		_ = c.rotate() // if it failed, the full file grows on: the output is kept, and it is tried again
	}
	n, err := c.f.Write(out.Bytes())
	c.size += int64(n)
	return err
}

// rotate keeps the full file as <path>.1 (replacing the one before) and starts a new one. The
// path never goes missing (a reader opening it meanwhile would fail): the full file is linked as
// <path>.1 and the new one renamed onto the path. A step that fails leaves the full file in use.
func (c *criLog) rotate() error {
	tmp := c.path + ".new"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	err = os.Remove(c.path + ".1")
	if err == nil || os.IsNotExist(err) {
		err = os.Link(c.path, c.path+".1")
	}
	if err == nil {
		err = os.Rename(tmp, c.path)
	}
	if err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	old := c.f
	c.f, c.size = f, 0
	return old.Close()
}
