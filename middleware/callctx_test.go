package middleware

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestCallContextIsDoneAtItsDeadline checks a store call's context: its
// deadline is the budget's, it is not done before it, not even when the
// request is cancelled, it is done at most a tick after it (plus 50 ms of
// slack for a slow machine) with the deadline as its cause, and the tick's
// channel is forgotten once closed.
func TestCallContextIsDoneAtItsDeadline(t *testing.T) {
	const budget = 80 * time.Millisecond
	cc := newCallContexts(budget)
	start := time.Now()
	request, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	ctx := cc.with(request, budget)
	deadline, ok := ctx.Deadline()
	if !ok || deadline.Before(start.Add(budget)) || deadline.After(time.Now().Add(budget)) {
		t.Fatalf("deadline %v (ok %v), want %v after the call", deadline.Sub(start), ok, budget)
	}
	if err := ctx.Err(); err != nil {
		t.Fatalf("Err before the deadline: %v", err)
	}
	// The client goes away during the call: the call goes on.
	cancel(errors.New("client gone"))
	if err := ctx.Err(); err != nil {
		t.Fatalf("Err after the request's cancellation, before the deadline: %v", err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(budget + cc.tick + 50*time.Millisecond):
		t.Fatal("not done a tick after its deadline")
	}
	if now := time.Now(); now.Before(deadline) {
		t.Errorf("done %v before its deadline", deadline.Sub(now))
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
// tick share its channel, and calls a tick apart do not.
func TestCallContextsShareATick(t *testing.T) {
	cc := newCallContexts(time.Hour) // ticks of 225 s: two calls made now share one
	a, b := cc.with(context.Background(), time.Hour), cc.with(context.Background(), time.Hour)
	c := cc.with(context.Background(), time.Hour+cc.tick)
	if a.Done() != b.Done() {
		t.Error("two calls made together have channels of their own")
	}
	if a.Done() == c.Done() {
		t.Error("calls a tick apart share a channel")
	}
}

// TestCallContextKeepsTheRequest checks what a call's context takes from the
// request's: its values, an earlier deadline, and, when the request is
// already done, the request's own context (so the store refuses at once).
func TestCallContextKeepsTheRequest(t *testing.T) {
	type key struct{}
	cc := newCallContexts(time.Hour)
	parent := context.WithValue(context.Background(), key{}, "request")
	if v := cc.with(parent, time.Hour).Value(key{}); v != "request" {
		t.Errorf("value %v, want the request's", v)
	}

	soon := time.Now().Add(time.Minute)
	early, cancel := context.WithDeadline(parent, soon)
	defer cancel()
	if d, _ := cc.with(early, time.Hour).Deadline(); !d.Equal(soon) {
		t.Errorf("deadline %v, want the request's earlier %v", d, soon)
	}

	gone, cancelGone := context.WithCancel(parent)
	cancelGone()
	if ctx := cc.with(gone, time.Hour); ctx != gone {
		t.Errorf("a request already cancelled got a call context of its own: Err %v", ctx.Err())
	}
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
