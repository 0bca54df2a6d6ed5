package cli

import (
	"fmt"
	"net/url"
	"os"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/pkg/image"
	"github.com/ain-hpc/ain/pkg/recipe"
)

// Flag values are checked when the flags are parsed, before a command does anything, with an
// error naming the flag (issue 19: --timeout -5s ran without a limit, --replicas 0 deployed the
// recipe's 2, bench --nodes 0 used 3). These Actions run only for a flag that was given, so
// "not given" keeps meaning "the recipe's".

// positiveDuration refuses a zero or negative duration for --name.
func positiveDuration(name string) func(*ucli.Context, time.Duration) error {
	return func(c *ucli.Context, d time.Duration) error {
		if d <= 0 {
			return ainerr.Usagef("--%s %s: give a positive duration (e.g. 90s, 30m, 2h), or leave it out%s", name, d, flagDefault(c, name))
		}
		return nil
	}
}

// imageReference refuses a --name that is not an image reference the kubelet would pull (the
// pod would sit in InvalidImageName until the probe timeout; image.Check has the grammar).
func imageReference(name string) func(*ucli.Context, string) error {
	return func(_ *ucli.Context, s string) error {
		if err := image.Check(s); err != nil {
			return ainerr.Usagef("--%s %q: %v: give an image reference such as busybox:1.36 or registry.example.com/tools/busybox:1.36", name, s, err)
		}
		return nil
	}
}

// httpURL refuses a --name that is not an absolute http or https URL with a host.
func httpURL(name string) func(*ucli.Context, string) error {
	return func(_ *ucli.Context, s string) error {
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return ainerr.Usagef("--%s %q: give the server's base URL, such as http://prometheus.monitoring:9090", name, s)
		}
		return nil
	}
}

// byteSize refuses a --name that recipe.ParseBytes does not read, or one under 1 MiB.
func byteSize(name string) func(*ucli.Context, string) error {
	return func(_ *ucli.Context, s string) error {
		n, err := recipe.ParseBytes(s)
		if err != nil || n < 1<<20 {
			return ainerr.Usagef("--%s %q: give a size of at least 1M, a number with K, M or G (powers of 1024), such as 512M or 2G", name, s)
		}
		return nil
	}
}

// nonNegativeDuration refuses a negative duration for --name (0 has a meaning of its own).
func nonNegativeDuration(name string) func(*ucli.Context, time.Duration) error {
	return func(c *ucli.Context, d time.Duration) error {
		if d < 0 {
			return ainerr.Usagef("--%s %s: give 0 or a positive duration (e.g. 10s, 1m), or leave it out%s", name, d, flagDefault(c, name))
		}
		return nil
	}
}

// flagDefault says what leaving --name out means, from the flag itself: its default value,
// its DefaultText ("none": no limit), or nothing when neither says (the usage then does). Integer
// flags say theirs too: "the recipe's" is only right where the flag's DefaultText says so (issue
// 19: `bench rdma --qps -1`, which has no recipe, said "leave it out for the recipe's").
func flagDefault(c *ucli.Context, name string) string {
	if c == nil || c.Command == nil {
		return ""
	}
	for _, f := range c.Command.Flags {
		if inf, ok := f.(*ucli.IntFlag); ok && inf.Name == name {
			switch {
			case inf.DefaultText != "":
				return " for " + inf.DefaultText
			case inf.Value != 0:
				return fmt.Sprintf(" for the default (%d)", inf.Value)
			}
			return ""
		}
		df, ok := f.(*ucli.DurationFlag)
		if !ok || df.Name != name {
			continue
		}
		switch {
		case df.DefaultText == "none":
			return " for no limit"
		case df.DefaultText != "":
			return " for the default (" + df.DefaultText + ")"
		case df.Value > 0:
			return " for the default (" + df.Value.String() + ")"
		}
	}
	return ""
}

// intBetween refuses a value of --name outside [min, max].
func intBetween(name string, min, max int) func(*ucli.Context, int) error {
	return func(c *ucli.Context, n int) error {
		if n < min || n > max {
			return ainerr.Usagef("--%s %d: give a number from %d to %d, or leave it out%s", name, n, min, max, flagDefault(c, name))
		}
		return nil
	}
}

// writableDir checks that files can be created under dir (made if missing) for --name, before
// any job is submitted: a results folder found unwritable after an hour's job loses its logs
// (issue 19: train --save-logs DIR was not checked before the job ran).
func writableDir(name, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return ainerr.New(ainerr.Usage, fmt.Errorf("--%s %s: cannot create the folder: %w", name, dir, err), "give a folder you can write to")
	}
	f, err := os.CreateTemp(dir, ".ain-write-check-*")
	if err != nil {
		return ainerr.New(ainerr.Usage, fmt.Errorf("--%s %s: cannot write there: %w", name, dir, err), "give a folder you can write to")
	}
	f.Close()
	return os.Remove(f.Name())
}
