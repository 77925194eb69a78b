package bench

import (
	"strconv"
	"time"
)

// Spec is the limit and key space every peer of a run is configured with.
//
// Token-bucket and GCRA peers get Rate per Period with a capacity of Burst;
// window peers (fixed or sliding window) get Burst per Period, their closest
// equivalent: the most that may pass at once.
type Spec struct {
	Rate   int64
	Period time.Duration
	Burst  int64
	// Keys is the key space; a worker checks Keys[i].
	Keys []string
	// Rules is how many rules each check decides (0 means 1). A peer that
	// decides several rules in one call gets rule r's key for key i from
	// [Spec.RuleKey]; the others are stacked by the harness, one call per rule.
	Rules int
}

// HighLimit is a limit no run reaches: one million per second with a
// capacity of 2^30, so the benchmarks measure admitting, not refusing.
func HighLimit(keys []string) Spec {
	return Spec{Rate: 1_000_000, Period: time.Second, Burst: 1 << 30, Keys: keys}
}

// RaceLimit is the correctness race's limit: 100 with a negligible refill
// (100 per hour: under 0.03 tokens a second).
func RaceLimit(key string) Spec {
	return Spec{Rate: 100, Period: time.Hour, Burst: 100, Keys: []string{key}}
}

// Keys returns n distinct keys shaped like user identities.
func Keys(n int) []string {
	ks := make([]string, n)
	for i := range ks {
		ks[i] = "user:" + strconv.Itoa(i)
	}
	return ks
}

// RuleKey returns the key of rule r for base key k: distinct per rule.
func RuleKey(r int, k string) string { return "r" + strconv.Itoa(r) + ":" + k }

func (s Spec) rules() int { return max(s.Rules, 1) }

// ruleKeys returns the keys of every rule for every key index, in one flat
// slice: key index i's rules are out[i*rules : (i+1)*rules]. One slice, so
// finding a check's keys costs sluice no more memory reads than a peer's
// single key costs it.
func (s Spec) ruleKeys() []string {
	n := s.rules()
	out := make([]string, 0, len(s.Keys)*n)
	for _, k := range s.Keys {
		for r := range n {
			if n == 1 {
				out = append(out, k)
			} else {
				out = append(out, RuleKey(r, k))
			}
		}
	}
	return out
}
