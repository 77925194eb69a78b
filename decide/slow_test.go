package decide

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/obs"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/rules"
)

// TestProcessSlow: a timeout noticed well after its deadline is the
// process's; one at its deadline, another failure, or a partial failure
// is left as it is.
func TestProcessSlow(t *testing.T) {
	deadline := time.Unix(1_700_000_000, 0)
	call, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	timeout := &sluice.StoreError{Op: "redisstore: take", Kind: sluice.ErrTimeout, Ambiguous: true, Err: context.DeadlineExceeded}
	down := &sluice.StoreError{Op: "redisstore: take", Kind: sluice.ErrUnavailable}
	partial := &sluice.PartialError{Failed: []int{0}, Err: timeout}
	late := lateAfter(50 * time.Millisecond)
	for _, tt := range []struct {
		name string
		err  error
		end  time.Duration // after the deadline
		slow bool
	}{
		{"timeout read late", timeout, late + time.Millisecond, true},
		{"bare deadline read late", context.DeadlineExceeded, 30 * time.Millisecond, true},
		{"timeout at its deadline", timeout, time.Millisecond, false},
		{"unavailable, late", down, time.Second, false},
		{"partial, late", partial, time.Second, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			slow := processSlow(tt.err, call, deadline.Add(tt.end), late)
			if (slow != nil) != tt.slow {
				t.Fatalf("%v: process slow %v, want %v", slow, !tt.slow, tt.slow)
			}
			if !tt.slow {
				return
			}
			var got error = slow
			if !errors.Is(got, sluice.ErrProcessSlow) {
				t.Errorf("%v: not ErrProcessSlow", got)
			}
			if !errors.Is(got, sluice.ErrTimeout) && !errors.Is(got, context.DeadlineExceeded) {
				t.Errorf("%v: no longer a timeout", got)
			}
			if k, amb := obs.Classify(got); obs.KindNames[k] != "process_slow" || amb != sluice.IsAmbiguous(tt.err) {
				t.Errorf("labelled %q ambiguous %v", obs.KindNames[k], amb)
			}
		})
	}
	if late != 12500*time.Microsecond || lateAfter(time.Millisecond) != minLate {
		t.Errorf("lateAfter: %v, %v", late, lateAfter(time.Millisecond))
	}
}

// lateStore answers every call with a timeout, returning after its
// deadline by lag: a caller not run in time.
type lateStore struct{ lag time.Duration }

func (s lateStore) Take(ctx context.Context, _ []sluice.Hit, _ []sluice.Result) error {
	d, _ := ctx.Deadline()
	time.Sleep(time.Until(d.Add(s.lag)))
	return &sluice.StoreError{Op: "test: take", Kind: sluice.ErrTimeout, Ambiguous: true, Err: context.DeadlineExceeded}
}

// calls records the store calls an observer sees.
type calls struct {
	mu   sync.Mutex
	errs []error
}

func (c *calls) Observe(context.Context, sluice.Decision) {}
func (c *calls) ObserveStoreCall(_ context.Context, call sluice.StoreCall) {
	c.mu.Lock()
	c.errs = append(c.errs, call.Err)
	c.mu.Unlock()
}

// TestProcessSlowObserved: a call that returns long after its deadline
// reaches the observer, and the outcome's error, as process slow, and its
// rule's on_fail still applies. A call returning at its deadline is a
// plain timeout: only on a quiet machine (SLUICE_TIMING=1) can the test
// count on being run in time.
func TestProcessSlowObserved(t *testing.T) {
	lags := []time.Duration{40 * time.Millisecond}
	if os.Getenv("SLUICE_TIMING") == "1" {
		lags = append(lags, 0)
	}
	for _, lag := range lags {
		t.Run(fmt.Sprint(lag), func(t *testing.T) {
			obs := &calls{}
			dc, err := New(lateStore{lag}, WithBudget(8*time.Millisecond), WithObserver(obs), WithLogger(slog.New(slog.DiscardHandler)))
			if err != nil {
				t.Fatal(err)
			}
			set := rules.MustNew(rules.Rule{Name: "a", Key: keyfunc.Global(), Limit: sluice.PerMinute(5)})
			o := dc.Check(set, httptest.NewRequest("GET", "/", nil), nil)
			defer o.Finish(context.Background(), 0)
			slow := lag > 0
			if len(obs.errs) != 1 || errors.Is(obs.errs[0], sluice.ErrProcessSlow) != slow || !errors.Is(obs.errs[0], sluice.ErrTimeout) {
				t.Fatalf("observed %v, want one timeout, process slow %v", obs.errs, slow)
			}
			if errors.Is(o.Err, sluice.ErrProcessSlow) != slow || o.Verdict != Admitted || !o.Local[0] {
				t.Errorf("outcome %v, err %v, local %v: want admitted by the local fallback", o.Verdict, o.Err, o.Local[0])
			}
		})
	}
}

// TestStarvation: the process counts as starved for starveFor after a
// call it noticed late: a timeout read late, or a call answered without
// I/O (a remembered refusal, an open breaker) that took longer than a
// call can without being descheduled; not after a call the store took
// its time to answer, nor after a timeout read at its deadline.
func TestStarvation(t *testing.T) {
	deadline := time.Now()
	call, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	late := lateAfter(50 * time.Millisecond)
	timeout := &sluice.StoreError{Op: "redisstore: take", Kind: sluice.ErrTimeout, Ambiguous: true, Err: context.DeadlineExceeded}
	open := &sluice.StoreError{Op: "redisstore: take", Kind: sluice.ErrBreakerOpen}
	for _, tt := range []struct {
		name       string
		err        error
		remembered bool
		latency    time.Duration
		end        time.Duration // after the deadline
		starved    bool
	}{
		{"remembered refusal, descheduled", nil, true, late + time.Millisecond, 0, true},
		{"remembered refusal, at once", nil, true, time.Microsecond, 0, false},
		{"decided by the store, slowly", nil, false, 40 * time.Millisecond, 0, false},
		{"open breaker, descheduled", open, false, late + time.Millisecond, 0, true},
		{"open breaker, at once", open, false, time.Microsecond, 0, false},
		{"timeout read late", timeout, false, 50*time.Millisecond + late + time.Millisecond, late + time.Millisecond, true},
		{"timeout read at its deadline", timeout, false, 50 * time.Millisecond, time.Millisecond, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var s starvation
			out := []sluice.Result{{Remembered: tt.remembered}}
			end := deadline.Add(tt.end)
			err := s.check(tt.err, out, call, tt.latency, end, late)
			if got := s.active(end); got != tt.starved {
				t.Fatalf("starved %v, want %v", got, tt.starved)
			}
			if slow := errors.Is(err, sluice.ErrProcessSlow); slow != (tt.err == timeout && tt.starved) {
				t.Errorf("error %v: process slow %v", err, slow)
			}
			if s.active(end.Add(starveFor)) {
				t.Errorf("still starved %v after", starveFor)
			}
		})
	}
}

// localAnswers is a store that answers every call in process: from
// TakeLocal when local, else from Take; refused from memory when
// remembered, else admitted.
type localAnswers struct {
	local, remembered bool
}

func (s localAnswers) answer(out []sluice.Result) {
	out[0] = sluice.Result{Allowed: true}
	if s.remembered {
		out[0] = sluice.Result{Remembered: true, RetryAfter: time.Second}
	}
}

func (s localAnswers) Take(_ context.Context, _ []sluice.Hit, out []sluice.Result) error {
	s.answer(out)
	return nil
}

func (s localAnswers) TakeLocal(_ []sluice.Hit, out []sluice.Result) bool {
	if s.local {
		s.answer(out)
	}
	return s.local
}

// TestStarvedYields: while the process is starved, a request the store
// answered from memory yields once, whether TakeLocal answered it or a
// call did (the lease store's remembered denials answer there); one the
// store decided does not, nor any while the process is not starved.
func TestStarvedYields(t *testing.T) {
	yields := 0
	saved := gosched
	gosched = func() { yields++ }
	t.Cleanup(func() { gosched = saved })
	hits := []sluice.Hit{{Key: "k", Limit: sluice.PerSecond(1), Cost: 1}}
	for _, tt := range []struct {
		name    string
		store   localAnswers
		starved bool
		want    int
	}{
		{"TakeLocal remembered, starved", localAnswers{local: true, remembered: true}, true, 1},
		{"Take remembered, starved", localAnswers{remembered: true}, true, 1},
		{"TakeLocal served, starved", localAnswers{local: true}, true, 0},
		{"Take decided, starved", localAnswers{}, true, 0},
		{"TakeLocal remembered, not starved", localAnswers{local: true, remembered: true}, false, 0},
		{"Take remembered, not starved", localAnswers{remembered: true}, false, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dc, err := New(tt.store)
			if err != nil {
				t.Fatal(err)
			}
			if tt.starved {
				dc.starved.until.Store(int64(time.Since(epoch) + time.Hour))
			}
			yields = 0
			if _, err := dc.take(context.Background(), hits, make([]sluice.Result, 1)); err != nil {
				t.Fatal(err)
			}
			if yields != tt.want {
				t.Fatalf("yielded %d times, want %d", yields, tt.want)
			}
		})
	}
}
