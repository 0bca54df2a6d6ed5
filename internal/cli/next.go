package cli

import (
	"fmt"
	"strings"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/pkg/next"
)

// runText is the commands a library suggests as the user types them: "run `ain doctor ib-ports`".
func runText(cmds []next.Command) string {
	quoted := make([]string, len(cmds))
	for i, c := range cmds {
		quoted[i] = "`ain " + string(c) + "`"
	}
	return "run " + strings.Join(quoted, ", ")
}

// nextText is what the suggested commands read as after the text they belong to:
// " (run `ain doctor ib-ports`)", or "" when there are none.
func nextText(cmds []next.Command) string {
	if len(cmds) == 0 {
		return ""
	}
	return " (" + runText(cmds) + ")"
}

// withNext is text followed by the commands it suggests.
func withNext(text string, cmds []next.Command) string { return text + nextText(cmds) }

// unnamed are the commands of cmds that text does not already name.
func unnamed(cmds []next.Command, text string) []next.Command {
	var out []next.Command
	for _, c := range cmds {
		if !strings.Contains(text, "ain "+string(c)) {
			out = append(out, c)
		}
	}
	return out
}

// printHints prints err's hint and the commands the libraries suggest with it that the hint
// does not already name.
func (a *App) printHints(err error) {
	hint := ainerr.HintOf(err)
	if hint != "" {
		fmt.Fprintf(a.Streams.Err, "hint: %s\n", hint)
	}
	if cmds := unnamed(next.Of(err), hint); len(cmds) > 0 {
		fmt.Fprintf(a.Streams.Err, "hint: %s\n", runText(cmds))
	}
}
