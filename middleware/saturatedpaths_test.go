package middleware_test

import (
	"context"
	"errors"
	"fmt"
	"runtime/metrics"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice"
)

// late counts an answer later than the budget + 50 ms, by what decided it.
func (s *saturation) late(n *note) {
	kind := n.outcome.String()
	if n.err != "" {
		kind += " after " + n.err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.over == nil {
		s.over = map[string]int{}
	}
	s.over[kind]++
}

// String says what decided the flood, and what decided its slowest answer.
func (s *saturation) String() string {
	slow := "?"
	if n := s.slowNote.Load(); n != nil {
		slow = fmt.Sprintf("%v after a store call of %v", n.outcome, n.latency.Round(time.Millisecond))
		if n.err != "" {
			slow += " that failed: " + n.err
		}
	}
	return fmt.Sprintf("%v; slowest answer: %s; longest wait to run %v (%d waits of 50 ms or more), longest GC pause %v; answers over the budget + 50 ms: %v",
		s.paths, slow, s.schedWait, s.longWaits, s.gcPause, s.over)
}

// note is what decided one request, written by paths.Observe into the
// request's context.
type note struct {
	outcome sluice.Outcome
	err     string        // the kind of the store's failure, if it failed
	latency time.Duration // the store call's
}

// failureKinds name what a store call failed with, as paths counts it.
var failureKinds = [...]string{"process_slow", "timeout", "breaker_open", "other"}

// failureKind returns the index in failureKinds of err's kind.
func failureKind(err error) int {
	switch {
	case errors.Is(err, sluice.ErrProcessSlow):
		return 0
	case errors.Is(err, sluice.ErrTimeout):
		return 1
	case errors.Is(err, sluice.ErrBreakerOpen):
		return 2
	}
	return 3
}

type noteKey struct{}

// paths counts what decided a flood's requests (the store, its memory of
// refusals, the local fallback after which failure) and how often the
// stores' breakers opened: where admissions come from.
type paths struct {
	store, remembered, denied   atomic.Int64
	localAdmitted, localRefused atomic.Int64
	failed                      [len(failureKinds)]atomic.Int64 // failed calls by kind
	localAfter                  [len(failureKinds)]atomic.Int64 // local admissions by the failure's kind
	opened                      atomic.Int64                    // breakers opened
}

func (p *paths) Observe(ctx context.Context, d sluice.Decision) {
	kind := -1
	if d.Err != nil {
		kind = failureKind(d.Err)
		p.failed[kind].Add(1)
	}
	switch {
	case d.Outcome == sluice.OutcomeAllowed:
		p.store.Add(1)
	case d.Outcome == sluice.OutcomeLocal && d.Result.Allowed:
		p.localAdmitted.Add(1)
		p.localAfter[kind].Add(1)
	case d.Outcome == sluice.OutcomeLocal:
		p.localRefused.Add(1)
	case d.Result.Remembered:
		p.remembered.Add(1)
	default:
		p.denied.Add(1)
	}
	if n, ok := ctx.Value(noteKey{}).(*note); ok {
		n.outcome, n.latency = d.Outcome, d.Latency
		if d.Err != nil {
			n.err = failureKinds[kind]
		}
	}
}

// reset zeroes the counts: what emptying the bucket took is not the
// flood's.
func (p *paths) reset() {
	for _, c := range []*atomic.Int64{&p.store, &p.remembered, &p.denied, &p.localAdmitted, &p.localRefused, &p.opened} {
		c.Store(0)
	}
	for i := range failureKinds {
		p.failed[i].Store(0)
		p.localAfter[i].Store(0)
	}
}

func (p *paths) BreakerChanged(_ string, _, to sluice.BreakerState) {
	if to == sluice.BreakerOpen {
		p.opened.Add(1)
	}
}

func (p *paths) ScriptReloaded(string) {}

func (p *paths) String() string {
	byKind := func(c *[len(failureKinds)]atomic.Int64) string {
		s := ""
		for i, k := range failureKinds {
			if i > 0 {
				s += ", "
			}
			s += fmt.Sprintf("%s %d", k, c[i].Load())
		}
		return s
	}
	return fmt.Sprintf("store admitted %d, refused %d, from memory %d; local admitted %d (after %s), refused %d; failed calls: %s; breakers opened %d",
		p.store.Load(), p.denied.Load(), p.remembered.Load(), p.localAdmitted.Load(), byKind(&p.localAfter),
		p.localRefused.Load(), byKind(&p.failed), p.opened.Load())
}

// schedMax returns the longest a goroutine waited to run, and the longest
// GC pause, as the runtime's histograms count them, since their readings
// in before (nil: read them now).
func schedMax(before []metrics.Sample) (wait, gc time.Duration, longWaits uint64, now []metrics.Sample) {
	now = []metrics.Sample{{Name: "/sched/latencies:seconds"}, {Name: "/sched/pauses/total/gc:seconds"}}
	metrics.Read(now)
	if before == nil {
		return 0, 0, 0, now
	}
	a, b := now[0].Value.Float64Histogram(), before[0].Value.Float64Histogram()
	for j := range a.Counts {
		if a.Buckets[j] >= 0.05 {
			longWaits += a.Counts[j] - b.Counts[j]
		}
	}
	top := func(i int) time.Duration {
		a, b := now[i].Value.Float64Histogram(), before[i].Value.Float64Histogram()
		for j := len(a.Counts) - 1; j >= 0; j-- {
			if a.Counts[j] > b.Counts[j] {
				return time.Duration(a.Buckets[j+1] * float64(time.Second))
			}
		}
		return 0
	}
	return top(0), top(1), longWaits, now
}
