package sandbox

import "time"

// coldCost is what a cold build of each component took on this project's reference machine
// (2 cores, empty Go build and module caches, nothing else running; `ain sandbox build` with
// fresh AIN_SANDBOX_CACHE, GOCACHE and GOMODCACHE), module downloads included. The estimate
// below scales these by the pace of the components already built on the machine at hand.
var coldCost = map[string]time.Duration{
	"etcd":              90 * time.Second,
	"kwok":              90 * time.Second,
	"training-operator": 2 * time.Minute,
	"mpi-operator":      2 * time.Minute,
	"jobset":            2 * time.Minute,
	"trainer":           2 * time.Minute,
	"kubernetes":        13 * time.Minute,
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
