package cli

import (
	"bufio"
	"errors"
	"fmt"
	"strings"

	"github.com/ain-hpc/ain/internal/ainerr"
)

// confirm asks question on a terminal ("... [y/N] ") before a destructive action. yes (--yes)
// skips the question; off a terminal there is nobody to ask, so it refuses with a usage error
// that names --yes; any answer but y/yes cancels with notDone as the message.
func (a *App) confirm(yes bool, what, question, notDone string) error {
	if yes {
		return nil
	}
	if !a.Streams.InTTY {
		return ainerr.Usagef("refusing to %s without confirmation: add --yes", what)
	}
	fmt.Fprintf(a.Streams.Err, "%s? [y/N] ", question)
	line, _ := bufio.NewReader(a.Streams.In).ReadString('\n')
	if ans := strings.ToLower(strings.TrimSpace(line)); ans != "y" && ans != "yes" {
		return ainerr.New(ainerr.Cancelled, errors.New(notDone), "")
	}
	return nil
}
