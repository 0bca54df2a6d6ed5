package cli

import (
	"bytes"
	"context"
	"fmt"
	"strconv"

	ucli "github.com/urfave/cli/v2"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/pkg/input"
	"github.com/ain-hpc/ain/pkg/nccl"
	"github.com/ain-hpc/ain/pkg/perftest"
	"github.com/ain-hpc/ain/pkg/profile"
	"github.com/ain-hpc/ain/pkg/recipe"
	"github.com/ain-hpc/ain/pkg/textout"
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
	if perftest.Detect(string(data)) {
		return a.runPerftestParse(o, data)
	}
	runs, err := nccl.ParsePerf(bytes.NewReader(data))
	if err != nil {
		// ParsePerf names the byte, not the file.
		return ainerr.New(ainerr.Failure, fmt.Errorf("%s: %w", inputName(o.File), err), "")
	}
	if len(runs) == 0 {
		return ainerr.New(ainerr.Failure, fmt.Errorf("no nccl-tests or perftest results in %s", inputName(o.File)),
			"the input should hold the table printed by an nccl-tests *_perf binary (size count type ... busbw #wrong) or by perftest's ib_*_bw/ib_*_lat (#bytes #iterations ...)")
	}
	return reportRuns(a, o.Output, runs, nccl.WritePerfCSV, a.printPerf, perfOK)
}

func perfOK(r *nccl.PerfRun) bool {
	if len(r.Errors) > 0 || (r.OutOfBounds != nil && *r.OutOfBounds > 0) {
		return false
	}
	for _, row := range r.Rows {
		for _, c := range []*nccl.PerfCell{row.OOP, row.IP} {
			if c != nil && c.Wrong != nil && *c.Wrong > 0 {
				return false
			}
		}
	}
	return true
}

func (a *App) printPerf(runs []*nccl.PerfRun) {
	w := a.Streams.Out
	for i, r := range runs {
		if i > 0 {
			fmt.Fprintln(w)
		}
		status := "OK"
		if !perfOK(r) {
			status = "PROBLEM"
		}
		coll := r.Collective
		if r.CollectiveInferred {
			coll += " (inferred)"
		}
		ranks := "not printed"
		if r.NRanks != nil {
			ranks = strconv.Itoa(*r.NRanks)
		} else if r.NRanksInferred != nil {
			ranks = strconv.Itoa(*r.NRanksInferred) + " (inferred from busbw/algbw)"
		}
		avg, max := "-", "-"
		if r.AvgBusbw != nil {
			avg = r.AvgBusbw.String()
		}
		if r.MaxBusbw != nil {
			max = fmtG(*r.MaxBusbw)
		}
		fmt.Fprintf(w, "%s: %s, ranks %s, %d sizes, max busbw %s GB/s, avg busbw %s GB/s\n", status, coll, ranks, len(r.Rows), max, avg)
		if r.OutOfBounds != nil && *r.OutOfBounds > 0 {
			fmt.Fprintf(w, "  problem: %d out-of-bounds values: the results are wrong, not just slow\n", *r.OutOfBounds)
		}
		for _, e := range r.Errors {
			fmt.Fprintf(w, "  problem: %s\n", e)
		}
		if r.Elided {
			fmt.Fprintln(w, "  note: rows were elided (...) in the input; the printed average covers them, maxBusbw does not")
		}
		perIter := false // nccl-tests -I 1: add the out-of-place p99 and coefficient of variation
		for _, row := range r.Rows {
			perIter = perIter || row.OOP.PerIter != nil
		}
		rows := make([][]string, 0, len(r.Rows))
		for _, row := range r.Rows {
			rec := []string{humanBytes(row.Size), row.Type, orDash(row.Redop)}
			rec = append(rec, row.OOP.Texts("-", "N/A")...)
			rec = append(rec, row.IP.Texts("-", "N/A")...)
			if perIter {
				p99, cv := "-", "-"
				if pi := row.OOP.PerIter; pi != nil {
					p99, cv = fmtG(pi.P99Us), fmtG(pi.CVPct)
				}
				rec = append(rec, p99, cv)
			}
			rows = append(rows, rec)
		}
		head := []string{"SIZE", "TYPE", "REDOP", "OOP TIME(us)", "OOP ALGBW", "OOP BUSBW", "OOP WRONG", "IP TIME(us)", "IP ALGBW", "IP BUSBW", "IP WRONG"}
		if perIter {
			head = append(head, "OOP P99(us)", "OOP CV%")
		}
		a.table(head, rows)
	}
}

func fmtG(v float64) string { return textout.G(v) }

// humanBytes prints a size the way nccl-tests' -b/-e take it: 8, 1K, 64M, 8G (binary units).
func humanBytes(n int64) string {
	units := []string{"", "K", "M", "G", "T", "P"}
	i := 0
	for n >= 1024 && n%1024 == 0 && i < len(units)-1 {
		n /= 1024
		i++
	}
	return strconv.FormatInt(n, 10) + units[i]
}

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
	if o.Output != "text" && o.Output != "json" {
		return ainerr.Usagef("-o must be text or json, got %q", o.Output)
	}
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
	w := a.Streams.Out
	pp := res.Params
	fmt.Fprintf(w, "allreduce model: %d nodes x %d GPUs = %d ranks, %d x %s Gb/s NICs per node = %s GB/s per node (%s intra-node)\n",
		pp.Nodes, pp.GPUsPerNode, res.NRanks, pp.NICsPerNode, fmtG(pp.LinkGbps), fmtG(res.NodeBusBwGBps), pp.Intra)
	fmt.Fprintf(w, "ring: latency %.1f us, algBw %.1f GB/s   tree: latency %.1f us, algBw %.1f GB/s\n",
		res.Ring.LatencyUs, res.Ring.AlgBwGBps, res.Tree.LatencyUs, res.Tree.AlgBwGBps)
	switch {
	case res.CrossoverBytes == nil:
		fmt.Fprintln(w, "crossover: none, tree is faster at every size")
	case *res.CrossoverBytes == 0:
		fmt.Fprintln(w, "crossover: none, ring is faster at every size")
	default:
		fmt.Fprintf(w, "crossover: ring is faster from %d bytes (%.1f MiB) on, tree below\n", *res.CrossoverBytes, float64(*res.CrossoverBytes)/(1<<20))
	}
	fmt.Fprintln(w)
	rows := make([][]string, 0, len(res.Rows))
	for _, r := range res.Rows {
		rec := []string{humanBytes(r.Size)}
		for _, pt := range []*nccl.ModelPoint{r.Ring, r.Tree} {
			if pt == nil {
				rec = append(rec, "-", "-", "-")
				continue
			}
			rec = append(rec, fmt.Sprintf("%.1f", pt.TimeUs), fmt.Sprintf("%.2f", pt.Algbw), fmt.Sprintf("%.2f", pt.Busbw))
		}
		rec = append(rec, r.Best)
		rows = append(rows, rec)
	}
	a.table([]string{"SIZE", "RING TIME(us)", "RING ALGBW", "RING BUSBW", "TREE TIME(us)", "TREE ALGBW", "TREE BUSBW", "BEST"}, rows)
	fmt.Fprintln(w, "\n(GB/s; Simple protocol only: small-message times are pessimistic, see `ain bench model --help`)")
	return nil
}
