package bincache_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ain-hpc/ain/pkg/sandbox/bincache"
	"github.com/ain-hpc/ain/pkg/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestDirPrecedence(t *testing.T) {
	rel, _ := filepath.Abs("rel/cache")
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string
		err  bool
	}{
		{"explicit wins", map[string]string{"AIN_SANDBOX_CACHE": "rel/cache", "XDG_CACHE_HOME": "/x", "HOME": "/h"}, rel, false},
		{"xdg over home", map[string]string{"XDG_CACHE_HOME": "/x", "HOME": "/h"}, "/x/ain/sandbox-bin", false},
		{"home", map[string]string{"HOME": "/h"}, "/h/.cache/ain/sandbox-bin", false},
		{"no HOME in getenv: the process's", map[string]string{}, filepath.Join(os.Getenv("HOME"), ".cache", "ain", "sandbox-bin"), false},
	} {
		got, err := bincache.Dir(func(k string) string { return tc.env[k] })
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("%s: Dir = %q, %v; want %q (error %v)", tc.name, got, err, tc.want, tc.err)
		}
	}
}
