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
// ReadLogs, what kwok serves logs with) reads on from its offset after each write event.
type criLog struct {
	mu      sync.Mutex
	f       *os.File
	partial []byte // the start of a line whose end has not come yet
}

// criMaxLine is where a line still without its end is written as "P" records, as containerd
// does past its max_container_log_line_size (16 KiB by default); a reader joins P records up to
// the next F one.
const criMaxLine = 16 << 10

// criTime is the CRI log's time format (RFC 3339 with nanoseconds, as CRILog writes).
const criTime = "2006-01-02T15:04:05.000000000Z07:00"

// createCRILog creates (or empties: a new run of the container) the log file at path.
func createCRILog(path string) (*criLog, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &criLog{f: f}, nil
}

// add writes data's complete lines, time-stamped now, in one write; an incomplete last line
// waits for its end (or for close).
func (c *criLog) add(data []byte, now time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.f == nil {
		return os.ErrClosed
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
	record := func(tag string, line []byte) {
		out.WriteString(ts)
		out.WriteString(" stdout ")
		out.WriteString(tag)
		out.WriteByte(' ')
		out.Write(line)
		out.WriteByte('\n')
	}
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
	_, err := c.f.Write(out.Bytes())
	return err
}
