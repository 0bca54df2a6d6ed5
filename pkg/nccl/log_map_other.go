//go:build !unix

package nccl

import (
	"io"
	"os"
)

// mapSource: no file is mapped here (log_map.go); the splitter reads.
type mapSource struct {
	f         *os.File
	off, size int64
	err       func() error
}

const mapMin = 1 << 20

func mappable(io.Reader, int64) *mapSource { return nil }

func (m *mapSource) window(from, to int64) (data, mapping []byte, err error) { return nil, nil, nil }

func (m *mapSource) done() {}

func (m *mapSource) restat() error { return nil }

func (m *mapSource) faultError(int64) error { return nil }

func unmap([]byte) {}
