package userdir_test

import (
	"errors"
	"testing"

	"github.com/ain-hpc/ain/pkg/userdir"
)

func TestDirs(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	home := env(map[string]string{"HOME": "/home/u"})
	for _, c := range []struct {
		f    func(func(string) string, string) (string, error)
		xdg  string
		want string
	}{
		{userdir.Cache, "XDG_CACHE_HOME", "/home/u/.cache/ain/x"},
		{userdir.Config, "XDG_CONFIG_HOME", "/home/u/.config/ain/x"},
		{userdir.State, "XDG_STATE_HOME", "/home/u/.local/state/ain/x"},
	} {
		if got, err := c.f(home, "x"); err != nil || got != c.want {
			t.Errorf("%s unset: %q %v, want %q", c.xdg, got, err, c.want)
		}
		if got, _ := c.f(env(map[string]string{"HOME": "/home/u", c.xdg: "/xdg"}), "x"); got != "/xdg/ain/x" {
			t.Errorf("%s=/xdg: %q", c.xdg, got)
		}
		// A relative XDG path is invalid by the specification: HOME's default applies.
		if got, _ := c.f(env(map[string]string{"HOME": "/home/u", c.xdg: "rel"}), "x"); got != c.want {
			t.Errorf("%s=rel: %q, want %q", c.xdg, got, c.want)
		}
		if _, err := c.f(env(nil), "x"); !errors.Is(err, userdir.ErrNoHome) {
			t.Errorf("%s, no HOME: %v", c.xdg, err)
		}
	}
}
