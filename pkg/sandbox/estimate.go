package sandbox

import "time"

// coldCost is what a cold build of each component took (empty Go build and module caches and
// binary cache: `ain sandbox build` with fresh GOCACHE, GOMODCACHE and AIN_SANDBOX_CACHE, module
// downloads included), measured on 2026-12-05 on this project's 2-core machine at nice 19 beside
// other work: 11m53s in all. The estimate scales them by the pace of the components already
// built on the machine at hand, so only their ratios need to hold elsewhere.
var coldCost = map[string]time.Duration{
	"etcd":              43 * time.Second,
	"kwok":              69 * time.Second,
	"training-operator": 57 * time.Second,
	"mpi-operator":      60 * time.Second,
	"jobset":            78 * time.Second,
	"trainer":           93 * time.Second,
	"kubernetes":        313 * time.Second,
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
