package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ain-hpc/ain/internal/cli"
)

// offlineCommands are the commands issue 16 times against `helm template`: they need no cluster,
// so their cost is process start-up (package init, measured by scripts/bench-startup.sh) plus
// the in-process work measured here.
var offlineCommands = []struct{ name, args string }{
	{"render", "render qlora -o yaml"},
	{"doctor-nccl-log", "doctor nccl-log ../../../shared/corpus/nccl-log/awsome-fsdp-p5-aws-ofi-nccl-init-lines.log"},
	{"bench-model", "bench model --nodes 3 --gpus-per-node 8 --link 400Gb"},
}

// BenchmarkOfflineCommand runs each offline command in-process, as main does, after package
// init; time and allocations per run are the command's own work.
func BenchmarkOfflineCommand(b *testing.B) {
	for _, c := range offlineCommands {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			args := append([]string{"ain"}, strings.Fields(c.args)...)
			for i := 0; i < b.N; i++ {
				var out, errb bytes.Buffer
				a := &cli.App{
					Streams: cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errb},
					Getenv:  func(string) string { return "" },
					Now:     time.Now,
				}
				if code := a.Run(context.Background(), args); code > 1 {
					b.Fatalf("ain %s: exit %d: %s", c.args, code, errb.String())
				}
			}
		})
	}
}

// BenchmarkStartup runs each offline command as a process of a freshly built ain, package init
// included (what a user waits for; scripts/bench-startup.sh sets it beside helm template), and
// reports the package init of one run traced with GODEBUG=inittrace=1: packages with an init,
// bytes and allocations (render: 317 packages, 2.6 MB, 18,000 allocations with client-go's
// typed clientset linked; 262, 1.5 MB, 9,000 with the hand-written client it replaced).
func BenchmarkStartup(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "ain")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	cmds := append([]struct{ name, args string }{{"version", "version"}}, offlineCommands...)
	for _, c := range cmds {
		b.Run(c.name, func(b *testing.B) {
			args := strings.Fields(c.args)
			run := func(env ...string) string {
				var errb bytes.Buffer
				cmd := exec.Command(bin, args...)
				cmd.Env, cmd.Stderr = append(os.Environ(), env...), &errb
				if err := cmd.Run(); err != nil && cmd.ProcessState.ExitCode() > 1 {
					b.Fatalf("ain %s: %v: %s", c.args, err, errb.String())
				}
				return errb.String()
			}
			var pkgs, bytesInit, allocs float64
			for _, l := range strings.Split(run("GODEBUG=inittrace=1"), "\n") {
				// init <package> @<t> ms, <clock> ms clock, <bytes> bytes, <allocs> allocs
				if f := strings.Fields(l); len(f) == 11 && f[0] == "init" {
					n, _ := strconv.ParseFloat(f[7], 64)
					a, _ := strconv.ParseFloat(f[9], 64)
					pkgs, bytesInit, allocs = pkgs+1, bytesInit+n, allocs+a
				}
			}
			if pkgs == 0 {
				b.Fatal("GODEBUG=inittrace=1 traced no package init")
			}
			b.ResetTimer()
			for b.Loop() {
				run()
			}
			b.ReportMetric(pkgs, "init-pkgs")
			b.ReportMetric(bytesInit, "init-B")
			b.ReportMetric(allocs, "init-allocs")
		})
	}
}
