package cli

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/ain-hpc/ain/internal/ainerr"
)

// ain's output convention, the same for every command: what a person reads is a table on a
// terminal and plain tab-aligned text off one (a.table decides); JSON, YAML or CSV appear only
// when asked for with -o, never because stdout is a pipe.

// outputFlag is the per-command -o flag. With formats given, any other value is refused when
// the flags are parsed, before the command does anything, with an error naming -o and the
// accepted values (def is always accepted).
func outputFlag(dest *string, def, usage string, formats ...string) *ucli.StringFlag {
	f := &ucli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: def, Usage: usage, Destination: dest}
	if len(formats) > 0 {
		f.Action = func(_ *ucli.Context, v string) error { return checkFormat(v, def, formats) }
	}
	return f
}

func checkFormat(v, def string, formats []string) error {
	if v == def || slices.Contains(formats, v) {
		return nil
	}
	if def != "" {
		formats = append([]string{def}, formats...)
	}
	last := len(formats) - 1
	list := formats[last]
	if last > 0 {
		list = strings.Join(formats[:last], ", ") + " or " + list
	}
	return ainerr.Usagef("-o %s: use %s", v, list)
}

// writeJSON prints v as indented JSON on stdout. HTML characters are not escaped (log lines
// hold <0> and ->, keep them readable) and a write error (a closed pipe, a full disk) is
// returned, so a command never reports success for output that was lost.
func (a *App) writeJSON(v any) error {
	enc := json.NewEncoder(a.Streams.Out)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("writing JSON: %w", err)
	}
	return nil
}

// verdict writes a checked result the same way for every command: v as JSON with -o json,
// else what text writes (a table, CSV); then exit 5 (check failed, nothing more printed) when
// ok is false. An output error is returned first: a lost output never reads as a verdict.
func (a *App) verdict(format string, v any, text func() error, ok bool) error {
	if format == "json" {
		if err := a.writeJSON(v); err != nil {
			return err
		}
	} else if err := text(); err != nil {
		return err
	}
	if !ok {
		return checkFailed()
	}
	return nil
}
