// Package lazyre compiles a package-level regular expression on first use instead of at package
// init: every ain command runs every package's init, so a parser's expressions would otherwise be
// compiled on each start-up of commands that never parse (issue 16, measured with
// GODEBUG=inittrace=1: pkg/counters and pkg/perftest compiled ~270 KB and 2,200 allocations).
package lazyre

import (
	"regexp"
	"sync"
)

// New returns a function that compiles expr once, on its first call, and panics if expr is
// invalid, as regexp.MustCompile does (the tests of each parser make the first call).
func New(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
