//go:build unix

// Reading a regular file by mapping it: the splitter's blocks are windows of the file's pages
// instead of copies made by read(2), the copy that was a third of the analyser's CPU time on the
// 512 MiB benchmark log, all of it in the workers' serial reading turn.

package nccl

import (
	"io"
	"os"
	"syscall"

	"github.com/ain-hpc/ain/pkg/input"
)

// mapSource is a regular file read by mapping windows of it.
type mapSource struct {
	f    *os.File
	off  int64        // the offset of the next byte to read
	size int64        // the file's size when the read began, taken again at its end (restat)
	err  func() error // what a Read would return before reading (an interrupt), or nil
}

// mapMin is the smallest file read by mapping: below it, the two system calls a block costs
// (mmap, munmap) save nothing over a read.
const mapMin = 1 << 20

// mappable is the mapSource of r when r reads a regular file of at least min bytes from where it
// stands (an *os.File, or a reader that gives its file: input.Open's), else nil.
func mappable(r io.Reader, min int64) *mapSource {
	var f *os.File
	errf := func() error { return nil }
	switch v := r.(type) {
	case *os.File:
		f = v
	case interface {
		File() *os.File
		Err() error
	}:
		f, errf = v.File(), v.Err
	default:
		return nil
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return nil
	}
	off, err := f.Seek(0, io.SeekCurrent)
	if err != nil || st.Size()-off < min {
		return nil
	}
	m := &mapSource{f: f, off: off, size: st.Size(), err: errf}
	// Some file systems map no file (FUSE with direct I/O: ENODEV); those are read.
	_, mapping, err := m.window(off, off+1)
	if err != nil {
		return nil
	}
	unmap(mapping)
	return m
}

// restat takes the file's size again, as a Read would meet it: a file that grew is read to its
// new end; one cut past what was read ends there; one cut below it is input.ErrShrank.
func (m *mapSource) restat() error {
	st, err := m.f.Stat()
	if err != nil {
		return err
	}
	if st.Size() < m.off {
		return input.ErrShrank
	}
	m.size = st.Size()
	return nil
}

// faultError is the error of a fault on a mapped page below file offset end: input.ErrShrank
// when the file is now shorter, else an I/O error (a failing disk, a network file system), as a
// read of the page would have returned.
func (m *mapSource) faultError(end int64) error {
	if st, err := m.f.Stat(); err == nil && st.Size() < end {
		return input.ErrShrank
	}
	return &os.PathError{Op: "read", Path: m.f.Name(), Err: syscall.EIO}
}

// window maps the file's bytes [from, to) and returns them, with the mapping to unmap. A private
// read-only mapping: the same bytes as a shared one, and some file systems map only those.
func (m *mapSource) window(from, to int64) (data, mapping []byte, err error) {
	if to <= from {
		return nil, nil, nil
	}
	page := int64(os.Getpagesize())
	at := from &^ (page - 1)
	mapping, err = syscall.Mmap(int(m.f.Fd()), at, int(to-at), syscall.PROT_READ, syscall.MAP_PRIVATE)
	if err != nil {
		return nil, nil, &os.PathError{Op: "mmap", Path: m.f.Name(), Err: err}
	}
	return mapping[from-at:], mapping, nil
}

// done leaves the file's offset after what was read, as reading it would have.
func (m *mapSource) done() { _, _ = m.f.Seek(m.off, io.SeekStart) }

func unmap(mapping []byte) {
	if mapping != nil {
		_ = syscall.Munmap(mapping)
	}
}
