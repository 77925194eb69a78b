package client

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"
)

// testPacer is a pacer on a fixed clock, for tests that drive its answers.
type testPacer struct {
	t     *testing.T
	p     pacer
	clock time.Time
}

func (tp *testPacer) reserve() (time.Duration, uint64) {
	tp.t.Helper()
	d, seq, err := tp.p.reserve(context.Background(), func() time.Time { return tp.clock })
	if err != nil {
		tp.t.Fatal(err)
	}
	return d, seq
}

// TestStaleAnswerKeepsPacing: requests in flight together are answered
// in any order. An answer with quota remaining to a request sent before
// the one whose answer said the quota was exhausted is stale and does not
// lift the pacing; one to a request sent after it does.
func TestStaleAnswerKeepsPacing(t *testing.T) {
	tp := &testPacer{t: t, clock: now}
	_, probe := tp.reserve()
	tp.p.answered(&Quota{Remaining: 2, Reset: 60 * time.Second}, probe, tp.clock)
	_, early := tp.reserve() // sent first, answered last
	_, late := tp.reserve()
	tp.p.answered(&Quota{Remaining: 0, Reset: 60 * time.Second, Limit: 10, Window: time.Minute}, late, tp.clock)
	tp.p.answered(&Quota{Remaining: 1, Reset: 60 * time.Second}, early, tp.clock)
	d, after := tp.reserve()
	if d != 6*time.Second {
		t.Fatalf("after a stale answer with quota remaining: wait %v, want 6s (60s/10)", d)
	}
	tp.clock = tp.clock.Add(d)
	tp.p.answered(&Quota{Remaining: 3, Reset: 60 * time.Second}, after, tp.clock)
	if d, _ := tp.reserve(); d != 0 {
		t.Fatalf("after a fresh answer with quota remaining: wait %v, want none", d)
	}
}

// TestInFlightRequestsUseTheQuota: with one unit remaining and a request
// in flight that uses it, the next request is not sent blind: it waits
// for that answer, and then for the policy's rate when the answer says
// the quota is exhausted.
func TestInFlightRequestsUseTheQuota(t *testing.T) {
	tp := &testPacer{t: t, clock: now}
	_, probe := tp.reserve()
	tp.p.answered(&Quota{Remaining: 1, Reset: time.Second, Limit: 10, Window: time.Minute}, probe, tp.clock)
	d, last := tp.reserve()
	if d != 0 {
		t.Fatalf("the last unit of quota: wait %v, want none", d)
	}
	got := make(chan time.Duration)
	go func() {
		d, _, _ := tp.p.reserve(context.Background(), func() time.Time { return tp.clock })
		got <- d
	}()
	for waiting := false; !waiting; runtime.Gosched() {
		tp.p.mu.Lock()
		waiting = tp.p.answer != nil
		tp.p.mu.Unlock()
	}
	select {
	case d := <-got:
		t.Fatalf("sent with the quota used up by the request in flight (wait %v)", d)
	default:
	}
	tp.p.answered(&Quota{Remaining: 0, Reset: 60 * time.Second, Limit: 10, Window: time.Minute}, last, tp.clock)
	if d := <-got; d != 6*time.Second {
		t.Fatalf("after the answer that the quota is exhausted: wait %v, want 6s (60s/10)", d)
	}
}

// TestCancelledWaitIsNotInFlight: a request whose pacing wait ends with
// its context is not counted in flight, so it holds no other request
// back.
func TestCancelledWaitIsNotInFlight(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("RateLimit", `"api";r=0;t=60`)
		w.Header().Set("RateLimit-Policy", `"api";q=10;w=60`)
	}))
	defer srv.Close()
	clock := now
	tr, err := New(nil, WithJitter(0), WithTime(func() time.Time { return clock }, func(ctx context.Context, d time.Duration) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		clock = clock.Add(d)
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: tr}
	resp, err := hc.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
	if _, err := hc.Do(req); !errors.Is(err, context.Canceled) {
		t.Fatalf("a paced request whose context ends: %v, want context.Canceled", err)
	}
	p := tr.pacer(req.URL.Host)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.inFlight != 0 {
		t.Fatalf("%d requests counted in flight after the cancelled wait, want 0", p.inFlight)
	}
}
