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
}

// StdStreams returns the process's standard streams.
func StdStreams() Streams {
	return Streams{
		In:    os.Stdin,
		Out:   os.Stdout,
		Err:   os.Stderr,
		IsTTY: term.IsTerminal(int(os.Stdout.Fd())),
		InTTY: term.IsTerminal(int(os.Stdin.Fd())),
	}
}
