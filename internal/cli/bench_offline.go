package cli

import (
	"context"
	"fmt"

	ucli "github.com/urfave/cli/v2"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/pkg/bench"
	"github.com/ain-hpc/ain/pkg/input"
	"github.com/ain-hpc/ain/pkg/nccl"
	"github.com/ain-hpc/ain/pkg/profile"
	"github.com/ain-hpc/ain/pkg/recipe"
)

// benchParseOptions are the flags of `ain bench parse`.
type benchParseOptions struct {
	Output string
	File   string
}

func (a *App) benchParseCommand() *ucli.Command {
	o := &benchParseOptions{}
	return &ucli.Command{
		Name:      "parse",
		Usage:     "parse nccl-tests output (all_reduce_perf, all_gather_perf, ...) or perftest output (ib_write_bw, ib_read_lat, ...) into JSON, CSV or a table",
		ArgsUsage: "FILE (nccl-tests or perftest output, launcher log, pasted text or the -J JSON file; - for stdin)",
		Description: "Reads the output of any *_perf binary of nccl-tests, old or new columns, with launcher prefixes,\n" +
			"stripped '#', elided rows or several runs concatenated, the per-iteration columns of -I 1 (i_min i_max\n" +
			"i_p99 i_cv%), and the JSON file of -J (nccl-tests >= 2.17; recognised by its leading '{').\n" +
			"-o json prints one object per run (an array\n" +
			"when the file holds several runs); -o csv one row per message size.\n" +
			"perftest output (any ib_*_bw/_lat table: MB/sec or --report_gbits, -a, per-port, -D, percentiles) is told\n" +
			"apart by its header and parsed with its settings, QPs and RoCE GIDs; values are kept exactly as printed.\n\n" +
			"Exit status: 0, or 5 (check failed) when a run reports wrong values (#wrong > 0, out-of-bounds values)\n" +
			"or a test failure; 1 when no nccl-tests or perftest table is found; 2 on bad arguments.",
		Flags: []ucli.Flag{outputFlag(&o.Output, "text", "output format: text, json or csv", "json", "csv")},
		Action: func(c *ucli.Context) error {
			if c.NArg() != 1 {
				return ainerr.Usagef("give one FILE with nccl-tests or perftest output (- for standard input), got %d arguments", c.NArg())
			}
			o.File = c.Args().First()
			return a.runBenchParse(c.Context, o)
		},
	}
}

func (a *App) runBenchParse(ctx context.Context, o *benchParseOptions) error {
	rc, err := a.openInput(ctx, o.File)
	if err != nil {
		return err
	}
	data, err := input.ReadAll(rc, inputName(o.File), maxParseInput)
	rc.Close()
	if err != nil {
		return inputError(ctx, o.File, ainerr.Failure, err)
	}
	out, err := bench.ParseOutput(data, inputName(o.File))
	if err != nil {
		return ainerr.New(ainerr.Failure, err, hintOf(err))
	}
	return a.verdict(o.Output, out.JSON(), func() error {
		if o.Output == "csv" {
			return out.WriteCSV(a.Streams.Out)
		}
		return out.WriteText(a.Streams.Out, a.Streams.IsTTY)
	}, out.OK())
}

// maxParseInput bounds what `bench parse` reads into memory to tell perftest from nccl-tests.
const maxParseInput = 256 << 20

// parseBytes reads a size from a flag with the recipe's grammar (recipe.ParseBytes: 8, 1K, 64M,
// 8G, optionally with B or iB), so a flag accepts exactly what a recipe does; a flag's size
// must also be positive.
func parseBytes(s string) (int64, error) {
	v, err := recipe.ParseBytes(s)
	if err != nil {
		return 0, err
	}
	if v < 1 {
		return 0, fmt.Errorf("%q: a size must be at least 1 byte", s)
	}
	return v, nil
}

// parseLinkRate reads a link rate in Gb/s with the profile's parser (profile.ParseLineRate).
func parseLinkRate(s string) (float64, error) {
	bps, err := profile.ParseLineRate(s)
	return bps / 1e9, err
}

// benchModelOptions are the flags of `ain bench model`.
type benchModelOptions struct {
	Output      string
	Nodes       int
	GPUsPerNode int
	Link        string
	NICsPerNode int
	Intra       string
	Algo        string
	MinBytes    string
	MaxBytes    string
	Factor      int
}

func (a *App) benchModelCommand() *ucli.Command {
	o := &benchModelOptions{}
	return &ucli.Command{
		Name:  "model",
		Usage: "predict allreduce time and bandwidth (ring vs tree) with NCCL's alpha-beta cost model",
		Description: "time = latency + bytes/algBw per algorithm, with NCCL 2.30's Simple-protocol constants; the node's\n" +
			"network bandwidth is NICs x link rate. Prints predicted time, algbw and busbw per size and the size\n" +
			"from which ring beats tree. Limits: Simple protocol only (small sizes are pessimistic), no NVLS/CollNet/\n" +
			"PAT, no congestion; a measured `ain bench parse` run is the truth.\n\n" +
			"Example: ain bench model --nodes 3 --gpus-per-node 8 --link 400Gb",
		Flags: []ucli.Flag{
			&ucli.IntFlag{Name: "nodes", Usage: "number of nodes (>= 2)", Destination: &o.Nodes, Required: true},
			&ucli.IntFlag{Name: "gpus-per-node", Usage: "GPUs (ranks) per node", Destination: &o.GPUsPerNode, Required: true},
			&ucli.StringFlag{Name: "link", Usage: "line rate of one NIC, e.g. 400Gb, 200G, 100", Destination: &o.Link, Required: true},
			&ucli.IntFlag{Name: "nics-per-node", Usage: "NICs per node used by NCCL (default: one per GPU)", Destination: &o.NICsPerNode},
			&ucli.StringFlag{Name: "intra", Value: "nvlink", Usage: "intra-node link: nvlink or pci", Destination: &o.Intra},
			&ucli.StringFlag{Name: "algo", Value: "both", Usage: "ring, tree or both", Destination: &o.Algo},
			&ucli.StringFlag{Name: "min-bytes", Aliases: []string{"b"}, Value: "8", Usage: "smallest size (8, 1K, 64M, ...)", Destination: &o.MinBytes},
			&ucli.StringFlag{Name: "max-bytes", Aliases: []string{"e"}, Value: "8G", Usage: "largest size", Destination: &o.MaxBytes},
			&ucli.IntFlag{Name: "factor", Aliases: []string{"f"}, Value: 2, Usage: "size step factor", Destination: &o.Factor},
			outputFlag(&o.Output, "text", "output format: text or json", "json"),
		},
		Action: func(c *ucli.Context) error {
			if c.NArg() > 0 {
				return ainerr.Usagef("bench model takes no arguments (got %q); use the flags", c.Args().First())
			}
			return a.runBenchModel(o)
		},
	}
}

func (a *App) runBenchModel(o *benchModelOptions) error {
	link, err := parseLinkRate(o.Link)
	if err != nil {
		return ainerr.Usagef("--link: %v", err)
	}
	minB, err := parseBytes(o.MinBytes)
	if err != nil {
		return ainerr.Usagef("--min-bytes: %v", err)
	}
	maxB, err := parseBytes(o.MaxBytes)
	if err != nil {
		return ainerr.Usagef("--max-bytes: %v", err)
	}
	p := nccl.ModelParams{Nodes: o.Nodes, GPUsPerNode: o.GPUsPerNode, LinkGbps: link, NICsPerNode: o.NICsPerNode, Intra: o.Intra}
	res, err := nccl.AllReduceModel(p, minB, maxB, int64(o.Factor), o.Algo)
	if err != nil {
		return ainerr.Usagef("%v", err)
	}
	if o.Output == "json" {
		return a.writeJSON(res)
	}
	if err := res.WriteText(a.Streams.Out, a.Streams.IsTTY); err != nil {
		return err
	}
	_, err = fmt.Fprintln(a.Streams.Out, "(`ain bench model --help` says what the model leaves out)")
	return err
}
