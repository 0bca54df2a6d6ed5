package sandbox

import "time"

// coldCost is what a cold build of each component took (empty Go build and module caches and
// binary cache, module downloads included), in the order of Components (later ones reuse what
// earlier ones compiled, and all of them what `go build` of ain compiled first, so a figure holds
// for that order only): the current stack's as the background build of `ain demo`
// (scripts/measure-cold.sh demo) on 2026-12-06 on this project's 2-core machine, nothing else
// running, 17m10s in all, each figure read from the demo's progress line (15 s steps; CoreDNS
// under one step). training-operator was not in that build: its figure is the one measured
// beside etcd's on 2026-12-05 (57 s and 43 s), scaled by etcd's ratio between 2026-12-05 and the
// previous day's measure. Kubernetes is v1.36.2's figure, built right after a cold `go build` of
// ain in an empty build cache (419 s on 2026-12-06; v1.37.2, which shared nothing with ain's
// build, took 12m30s in the demo above). The estimate scales them by the pace of the components already built on
// the machine at hand, so only their ratios need to hold elsewhere.
var coldCost = map[string]time.Duration{
	"etcd":              90 * time.Second,
	"trainer":           45 * time.Second,
	"jobset":            45 * time.Second,
	"mpi-operator":      15 * time.Second,
	"kwok":              75 * time.Second,
	"training-operator": 160 * time.Second,
	"kubernetes":        420 * time.Second,
	"coredns":           10 * time.Second,
}

// ColdCost is a component's cold build time on the reference machine (coldCost); a component
// with no figure counts as the mean of the others.
func ColdCost(name string) time.Duration {
	if d, ok := coldCost[name]; ok {
		return d
	}
	var sum time.Duration
	for _, d := range coldCost {
		sum += d
	}
	return sum / time.Duration(len(coldCost))
}

// BuildEstimate is the time left in a build of comps (in order) when done of them are built in
// doneTook and the next has been building for current. Each component left counts its cold
// cost scaled by this machine's pace so far (doneTook over the done components' costs; 1 before
// the first is done, when the reference figures are all there is). A component that runs over
// its scaled cost counts as nearly finished (a tenth of it left), not as negative time.
func BuildEstimate(comps []string, done int, doneTook, current time.Duration) time.Duration {
	if done >= len(comps) {
		return 0
	}
	pace := 1.0
	var doneCost time.Duration
	for _, c := range comps[:done] {
		doneCost += ColdCost(c)
	}
	if done > 0 && doneCost > 0 && doneTook > 0 {
		pace = float64(doneTook) / float64(doneCost)
	}
	scaled := func(c string) time.Duration { return time.Duration(float64(ColdCost(c)) * pace) }
	now := scaled(comps[done])
	left := max(now-current, now/10)
	for _, c := range comps[done+1:] {
		left += scaled(c)
	}
	return left
}
