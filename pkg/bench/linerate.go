package bench

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/ain-hpc/ain/pkg/ibport"
)

// PortRate is one port the IB port probe saw on a benchmark's node.
type PortRate struct {
	Node   string
	Port   string // mlx5_0:1
	Rate   string // as the kernel prints it: "200 Gb/sec (4X HDR)"
	Active bool
}

// rateMismatch is how far (relative) the probed rate may be from the profile's lineRate before
// the result says so loudly.
const rateMismatch = 0.05

// UseProbedRate makes "% of line rate" mean "% of what the ports run at": the rate of the
// ACTIVE ports the probe saw on the benchmark's nodes (the fastest port of each node, among the
// profile's HCAs when it lists them; the slowest such node, since a ring runs at its slowest
// link). When it differs from the profile's lineRate the result says so loudly (LineRateNote,
// first in the verdict): a profile that says 400Gb over 200 Gb/s ports would call a healthy
// fabric "far below what it can do". Without a usable probed rate the profile's stays, flagged
// as unverified. Call it before Summarize.
func (res *Result) UseProbedRate(ports []PortRate, hcas []string, probeErr string) {
	res.ProfileLineRate = res.LineRate
	res.LineRateSource = "profile"
	perNode, example := fastestPorts(ports, func(port string) bool { return hcaListed(port, hcas) })
	if len(perNode) == 0 {
		why := "no ACTIVE port with a rate"
		if probeErr != "" {
			why = probeErr
		}
		res.LineRateNote = fmt.Sprintf("line rate %s is the profile's, not checked against the ports (%s)", res.LineRate, why)
		return
	}
	nodes := make([]string, 0, len(perNode))
	for n := range perNode {
		nodes = append(nodes, n)
	}
	slices.Sort(nodes)
	slow := nodes[0]
	for _, n := range nodes[1:] {
		if perNode[n] < perNode[slow] {
			slow = n
		}
	}
	gbps := perNode[slow]
	prof := res.LineRateGBps * 8
	res.LineRate = strconv.FormatFloat(gbps, 'f', -1, 64) + "Gb"
	res.LineRateGBps = gbps / 8
	res.LineRateSource = "probe"
	ev := example[slow]
	switch {
	case prof > 0 && math.Abs(gbps-prof)/prof > rateMismatch:
		res.LineRateMismatch = true
		res.LineRateNote = fmt.Sprintf("LINE RATE MISMATCH: the profile's lineRate is %s but the ports on the benchmark's nodes run at %s (%s); percentages below are of the probed %s. Set spec.lineRate: %s in the profile, or, if the ports should be faster, check the links (cable, transceiver, width, speed negotiation).",
			res.ProfileLineRate, strconv.FormatFloat(gbps, 'f', -1, 64)+" Gb/s", ev, res.LineRate, res.LineRate)
	case prof > 0:
		res.LineRateNote = fmt.Sprintf("line rate %s as probed on %d node(s) (%s), as the profile says", res.LineRate, len(nodes), ev)
	default:
		res.LineRateNote = fmt.Sprintf("line rate %s as probed on %d node(s) (%s)", res.LineRate, len(nodes), ev)
	}
}

// fastestPorts gives the rate (Gb/s) of each node's fastest ACTIVE port among those keep accepts,
// and the line saying which port it is ("node mlx5_0:1: 200 Gb/sec (4X HDR)").
func fastestPorts(ports []PortRate, keep func(port string) bool) (map[string]float64, map[string]string) {
	perNode := map[string]float64{}
	example := map[string]string{}
	for _, p := range ports {
		if !p.Active || !keep(p.Port) {
			continue
		}
		v, ok := ibport.RateGbps(p.Rate)
		if !ok {
			continue
		}
		if v > perNode[p.Node] {
			perNode[p.Node] = v
			example[p.Node] = p.Node + " " + p.Port + ": " + p.Rate
		}
	}
	return perNode, example
}

// hcaListed reports whether port (mlx5_0:1) is among hcas (mlx5_0:1 or mlx5_0); an empty list
// lists every port.
func hcaListed(port string, hcas []string) bool {
	if len(hcas) == 0 {
		return true
	}
	dev, _, _ := strings.Cut(port, ":")
	for _, h := range hcas {
		h = strings.TrimPrefix(h, "=")
		if h == port || h == dev {
			return true
		}
	}
	return false
}
