package cli

import (
	"strings"

	"github.com/ain-hpc/ain/pkg/next"
)

// nextText is what the libraries' suggested commands read as after the text they belong to:
// " (run `ain doctor ib-ports`)", or "" when there are none.
func nextText(cmds []next.Command) string {
	if len(cmds) == 0 {
		return ""
	}
	quoted := make([]string, len(cmds))
	for i, c := range cmds {
		quoted[i] = "`ain " + string(c) + "`"
	}
	return " (run " + strings.Join(quoted, ", ") + ")"
}

// withNext is text followed by the commands it suggests.
func withNext(text string, cmds []next.Command) string { return text + nextText(cmds) }
