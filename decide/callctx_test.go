package decide

import (
	"context"
	"errors"
	"math"
	"runtime"
	"testing"
	"time"
)

// ticked returns the shared tick behind a call context, failing the test if
// ctx is not one.
func ticked(t *testing.T, ctx context.Context) *callContext {
	t.Helper()
	c, ok := ctx.(*callContext)
	if !ok {
		t.Fatalf("%T, want a *callContext", ctx)
	}
	return c
}

// TestCallContextIsDoneAtItsDeadline checks a store call's context: its
// deadline is the budget's; its tick ends at or after the deadline, less
// than a tick later; it is not cut short by the request's cancellation; it
// is done, with the deadline as its error and cause; and the tick is
// forgotten once done.
func TestCallContextIsDoneAtItsDeadline(t *testing.T) {
	const budget = 80 * time.Millisecond
	cc := newCallContexts(budget)
	request, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	start := time.Now()
	ctx, release := cc.with(request)
	if release != nil {
		t.Fatal("a ticked call context has a release function")
	}
	deadline, ok := ctx.Deadline()
	if !ok || deadline.Before(start.Add(budget)) || deadline.After(time.Now().Add(budget)) {
		t.Fatalf("deadline %v (ok %v), want %v after the call", deadline.Sub(start), ok, budget)
	}
	end, _ := ticked(t, ctx).tick.Deadline()
	if end.Before(deadline) || end.Sub(deadline) >= cc.tick {
		t.Errorf("tick ends %v after the deadline, want within [0, %v)", end.Sub(deadline), cc.tick)
	}
	cancel(errors.New("client gone")) // the call goes on
	if err := ctx.Err(); err != nil && time.Now().Before(deadline) {
		t.Fatalf("Err before the deadline, after the request's cancellation: %v", err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("not done 5 s after its deadline")
	}
	if err := ctx.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Err after the deadline: %v", err)
	}
	if err := context.Cause(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Cause after the deadline: %v", err)
	}
	waitFor(t, func() bool {
		cc.mu.Lock()
		defer cc.mu.Unlock()
		return len(cc.ticks) == 0
	})
}

// TestCallContextsShareATick checks that calls whose deadlines fall in one
// tick share it, and calls a tick apart do not.
func TestCallContextsShareATick(t *testing.T) {
	cc := newCallContexts(time.Hour) // ticks of 225 s: two calls made now share one
	a, _ := cc.with(context.Background())
	b, _ := cc.with(context.Background())
	if ticked(t, a).tick != ticked(t, b).tick {
		t.Error("two calls made together have ticks of their own")
	}
	earlier, cancel := context.WithDeadline(context.Background(), time.Now().Add(time.Hour-cc.tick))
	defer cancel()
	c, _ := cc.with(earlier)
	if ticked(t, a).tick == ticked(t, c).tick {
		t.Error("calls a tick apart share a tick")
	}
	if b, _ := cc.with(context.Background()); ticked(t, b).tick != ticked(t, a).tick {
		t.Error("a call after an earlier tick was handed out does not find the latest one")
	}
}

// TestCallContextKeepsTheRequest checks what a call's context takes from the
// request's: its values, an earlier deadline, and, when the request is
// already done, the request's own context (so the store refuses at once).
func TestCallContextKeepsTheRequest(t *testing.T) {
	type key struct{}
	cc := newCallContexts(time.Hour)
	parent := context.WithValue(context.Background(), key{}, "request")
	if ctx, _ := cc.with(parent); ctx.Value(key{}) != "request" {
		t.Errorf("value %v, want the request's", ctx.Value(key{}))
	}

	soon := time.Now().Add(time.Minute)
	early, cancel := context.WithDeadline(parent, soon)
	defer cancel()
	if ctx, _ := cc.with(early); !deadlineIs(ctx, soon) {
		t.Errorf("deadline not the request's earlier %v", soon)
	}

	gone, cancelGone := context.WithCancel(parent)
	cancelGone()
	if ctx, release := cc.with(gone); ctx != gone || release != nil {
		t.Errorf("a request already cancelled got a call context of its own: Err %v", ctx.Err())
	}
}

// TestCallContextAtTheEdges checks the calls that get a context of their
// own: a request whose deadline has passed though its timer has not fired
// (done at once), and budgets too long to tick, up to the largest one (a
// deadline centuries away, not one that overflowed into the past).
func TestCallContextAtTheEdges(t *testing.T) {
	// A live tick (of 225 s) that ends after a deadline just passed: a call
	// past its deadline must not be handed it.
	cc := newCallContexts(time.Hour)
	soon, cancel := context.WithDeadline(context.Background(), time.Now().Add(time.Millisecond))
	defer cancel()
	_, _ = cc.with(soon)
	ctx, release := cc.with(fakeDeadline{Context: context.Background(), at: time.Now().Add(-time.Microsecond)})
	if ctx.Err() == nil {
		t.Error("a request past its deadline got a call context that is not done")
	}
	if release != nil {
		release()
	}
	for _, budget := range []time.Duration{maxTicked + 1, 250 * 365 * 24 * time.Hour, math.MaxInt64} {
		ctx, release := newCallContexts(budget).with(context.Background())
		if release == nil {
			t.Errorf("budget %v: no release function", budget)
			continue
		}
		if ctx.Err() != nil {
			t.Errorf("budget %v: done at once: %v", budget, ctx.Err())
		}
		if d, _ := ctx.Deadline(); time.Until(d) < maxTicked/2 {
			t.Errorf("budget %v: deadline %v away", budget, time.Until(d))
		}
		release()
	}
}

// TestCallContextChildrenNeedNoGoroutine checks that contexts derived from a
// call context follow it through its AfterFunc, not a goroutine each, and
// are done with it.
func TestCallContextChildrenNeedNoGoroutine(t *testing.T) {
	cc := newCallContexts(16 * time.Millisecond)
	ctx, _ := cc.with(context.Background())
	before := runtime.NumGoroutine()
	children := make([]context.Context, 100)
	for i := range children {
		var cancel context.CancelFunc
		children[i], cancel = context.WithCancel(ctx)
		defer cancel()
	}
	if n := runtime.NumGoroutine() - before; n >= 50 {
		t.Errorf("%d goroutines for 100 derived contexts", n)
	}
	for _, child := range children {
		select {
		case <-child.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("a derived context not done 5 s after the call's deadline")
		}
	}
}

// fakeDeadline is a context whose deadline has passed but which is not done:
// a request whose timer has not fired yet.
type fakeDeadline struct {
	context.Context
	at time.Time
}

func (f fakeDeadline) Deadline() (time.Time, bool) { return f.at, true }

func deadlineIs(ctx context.Context, want time.Time) bool {
	d, ok := ctx.Deadline()
	return ok && d.Equal(want)
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("condition not met within 5 s")
}
