// Command ain turns recipe files into Kubernetes workloads on GPU clusters with RDMA,
// checks that the fabric is really used, and measures it.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/ain-hpc/ain/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, cli.StdStreams(), os.Args)
	stop()
	os.Exit(code)
}
