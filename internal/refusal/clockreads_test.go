package refusal

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice"
)

// TestAnswerReadsTheClockOnlyForARememberedBucket: a call none of whose
// buckets the memory holds is not answered and reads no clock; one whose
// bucket it holds reads it, answered or (expired) not.
func TestAnswerReadsTheClockOnlyForARememberedBucket(t *testing.T) {
	c := &clock{}
	reads := 0
	m := New(time.Second, 64, func() int64 { reads++; return c.now() })
	m.Remember([]sluice.Hit{hit("a", 1)}, []sluice.Result{refused(time.Second / 2)}, c.now())
	out := make([]sluice.Result, 2)
	for _, tc := range []struct {
		name    string
		elapsed time.Duration
		hits    []sluice.Hit
		answer  bool
		reads   int
	}{
		{"another bucket", 0, []sluice.Hit{hit("b", 1)}, false, 0},
		{"the same key, another limit", 0, []sluice.Hit{{Key: "a", Limit: sluice.PerMinute(7), Cost: 1}}, false, 0},
		{"two other buckets", 0, []sluice.Hit{hit("b", 1), hit("c", 1)}, false, 0},
		{"the remembered bucket", 0, []sluice.Hit{hit("b", 1), hit("a", 1)}, true, 1},
		{"the remembered bucket, expired", time.Second, []sluice.Hit{hit("a", 1)}, false, 1},
	} {
		c.step(tc.elapsed)
		reads = 0
		out[0], out[1] = sluice.Result{Allowed: true}, sluice.Result{Allowed: true}
		if got := m.Answer(tc.hits, out[:len(tc.hits)]); got != tc.answer || reads != tc.reads {
			t.Errorf("%s: answered %v reading the clock %d times; want %v, %d", tc.name, got, reads, tc.answer, tc.reads)
		}
		if !tc.answer && out[0] != (sluice.Result{}) {
			t.Errorf("%s: not answered, yet result %+v left", tc.name, out[0])
		}
	}
}
