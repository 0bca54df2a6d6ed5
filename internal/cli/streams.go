package cli

import (
	"io"
	"os"

	"golang.org/x/term"
)

// Streams are the IO streams a command reads and writes; no command touches os.Stdout directly.
type Streams struct {
	In    io.Reader
	Out   io.Writer
	Err   io.Writer
	IsTTY bool // Out is a terminal: tables, colour and live views are allowed
	InTTY bool // In is a terminal: prompts are allowed
	// ErrTTY: Err is a terminal, which a person reads and no log keeps: the one place a
	// generated secret may be shown.
	ErrTTY bool
	// ErrWidth is Err's terminal width in columns (0: not a terminal, or unknown).
	ErrWidth int
}

// StdStreams returns the process's standard streams.
func StdStreams() Streams {
	width, _, _ := term.GetSize(int(os.Stderr.Fd()))
	return Streams{
		In:       os.Stdin,
		Out:      os.Stdout,
		Err:      os.Stderr,
		IsTTY:    term.IsTerminal(int(os.Stdout.Fd())),
		InTTY:    term.IsTerminal(int(os.Stdin.Fd())),
		ErrTTY:   term.IsTerminal(int(os.Stderr.Fd())),
		ErrWidth: width,
	}
}
