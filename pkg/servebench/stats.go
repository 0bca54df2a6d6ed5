package servebench

import (
	"math"
	"sort"
	"strconv"

	"gonum.org/v1/gonum/stat"
)

// Stats summarises one latency metric in milliseconds, as `vllm bench serve` reports it.
type Stats struct {
	Mean   float64 `json:"mean"`
	Median float64 `json:"median"`
	// Std is the population standard deviation (numpy's np.std, ddof=0), as vLLM's std_*_ms.
	Std float64 `json:"std"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
	// Percentiles are the requested percentiles by name ("50", "99.9"), vLLM's p{N}_*_ms.
	Percentiles map[string]float64 `json:"percentiles,omitempty"`
}

// PercentileName is how vLLM names percentile p in its result keys: "99", "99.9".
func PercentileName(p float64) string { return strconv.FormatFloat(p, 'f', -1, 64) }

// summarize returns the statistics of xs (seconds) in milliseconds. Like vLLM's
// `np.mean(x or 0)`, an empty sample gives zeros. xs is sorted in place.
func summarize(xs []float64, pcts []float64) Stats {
	var st Stats
	if len(pcts) > 0 {
		st.Percentiles = make(map[string]float64, len(pcts))
	}
	if len(xs) == 0 {
		for _, p := range pcts {
			st.Percentiles[PercentileName(p)] = 0
		}
		return st
	}
	sort.Float64s(xs)
	mean, std := stat.PopMeanStdDev(xs, nil)
	st.Mean, st.Std = mean*1000, std*1000
	st.Median, st.P90, st.P99 = percentile(xs, 50)*1000, percentile(xs, 90)*1000, percentile(xs, 99)*1000
	for _, p := range pcts {
		st.Percentiles[PercentileName(p)] = percentile(xs, p) * 1000
	}
	return st
}

// percentile is numpy's default np.percentile (method "linear", Hyndman & Fan type 7):
// the value at rank (n-1)*p/100 of the sorted sample, interpolated between neighbours.
// gonum's stat.Quantile offers Empirical (an inverse of the empirical CDF, no interpolation)
// and LinInterp (interpolation at rank n*p, H&F type 4); neither equals numpy's, and the
// difference is visible at p99 of a few hundred requests, so vLLM's definition is kept here.
// sorted must be sorted ascending and non-empty.
func percentile(sorted []float64, p float64) float64 {
	h := float64(len(sorted)-1) * p / 100
	lo := math.Floor(h)
	i := int(lo)
	if i+1 >= len(sorted) {
		return sorted[len(sorted)-1]
	}
	return sorted[i] + (h-lo)*(sorted[i+1]-sorted[i])
}
