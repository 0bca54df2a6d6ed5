package main

import (
	"bytes"
	"context"
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
