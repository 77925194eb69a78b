package client_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// bucketServer is a limit of limit requests per window, kept on the
// test's fake clock, that answers as the demo gateway does: on every
// admitted request the remaining quota and the time until the whole quota
// is back (RateLimit r and t, rounded up) with the policy; on a refusal,
// 429 with Retry-After and t the time until the next unit.
type bucketServer struct {
	mu       sync.Mutex
	clock    func() time.Time
	limit    int64
	window   time.Duration
	tat      time.Time // theoretical arrival time (GCRA)
	admitted int
	refused  int
}

func (b *bucketServer) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock()
	interval := b.window / time.Duration(b.limit)
	tat := b.tat
	if tat.Before(now) {
		tat = now
	}
	newTAT := tat.Add(interval)
	allowAt := newTAT.Add(-b.window)
	w.Header().Set("RateLimit-Policy", fmt.Sprintf(`"per-ip";q=%d;w=%d`, b.limit, int(b.window/time.Second)))
	if now.Before(allowAt) {
		b.refused++
		wait := ceilSeconds(allowAt.Sub(now))
		w.Header().Set("RateLimit", fmt.Sprintf(`"per-ip";r=0;t=%d`, wait))
		w.Header().Set("Retry-After", fmt.Sprint(wait))
		w.WriteHeader(http.StatusTooManyRequests)
		return
	}
	b.tat = newTAT
	b.admitted++
	w.Header().Set("RateLimit", fmt.Sprintf(`"per-ip";r=%d;t=%d`, int64(now.Sub(allowAt)/interval), ceilSeconds(newTAT.Sub(now))))
	fmt.Fprintln(w, "ok")
}

func ceilSeconds(d time.Duration) int64 { return int64((d + time.Second - 1) / time.Second) }

// TestPacingSpendsTheQuotaFirst: 60 requests in a row against 50 a
// minute go out at once until the server says the quota is exhausted,
// then one per 1.2 s (the policy's rate): 12 s in all, none refused.
// A transport that spread the remaining quota over the reset would wait
// from the third request and take far longer.
func TestPacingSpendsTheQuotaFirst(t *testing.T) {
	ft := newFakeTime()
	b := &bucketServer{clock: ft.now, limit: 50, window: time.Minute}
	srv := httptest.NewServer(b)
	t.Cleanup(srv.Close)
	tr := newTransport(t, ft)
	start := ft.now()
	var sleptBefore []int // the requests that waited before they were sent
	for i := range 60 {
		n := len(ft.slept())
		resp, err := do(t, tr, context.Background(), "GET", srv.URL, "")
		if err != nil {
			t.Fatalf("request %d: %v", i+1, err)
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d: status %d reached the caller", i+1, resp.StatusCode)
		}
		if len(ft.slept()) > n {
			sleptBefore = append(sleptBefore, i+1)
		}
	}
	elapsed := ft.now().Sub(start)
	const ideal = 10 * 1200 * time.Millisecond // 50 at once, then 10 at 60s/50
	t.Logf("60 requests at 50/min: %v on the fake clock (ideal %v), waits before requests %v, refused %d", elapsed, ideal, sleptBefore, b.refused)
	if len(sleptBefore) > 0 && sleptBefore[0] <= 50 {
		t.Fatalf("request %d waited, with quota remaining (waits before requests %v)", sleptBefore[0], sleptBefore)
	}
	for _, d := range ft.slept() {
		if d != 1200*time.Millisecond {
			t.Fatalf("slept %v, want only waits of 1.2s (60s/50)", ft.slept())
		}
	}
	if elapsed != ideal || b.refused != 0 || b.admitted != 60 {
		t.Fatalf("%v for 60 requests, %d admitted, %d refused; want %v, 60 admitted, none refused", elapsed, b.admitted, b.refused, ideal)
	}
}

// TestNoWaitWhileQuotaRemains: however little quota remains and however
// long its reset, a request is sent at once, in every form of the fields.
func TestNoWaitWhileQuotaRemains(t *testing.T) {
	for _, tc := range []struct {
		name string
		kv   []string
	}{
		{"ietf with policy", []string{"RateLimit", `"api";r=1;t=59`, "RateLimit-Policy", `"api";q=50;w=60`}},
		{"ietf without policy", []string{"RateLimit", `"api";r=2;t=3600`}},
		{"draft-06", []string{"RateLimit-Limit", "50", "RateLimit-Remaining", "1", "RateLimit-Reset", "59"}},
		{"x-ratelimit epoch", []string{"X-RateLimit-Limit", "50", "X-RateLimit-Remaining", "1", "X-RateLimit-Reset", "1700000059"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, s := serve(t, status(200, tc.kv...))
			ft := newFakeTime()
			tr := newTransport(t, ft)
			for range 10 {
				if _, err := do(t, tr, context.Background(), "GET", srv.URL, ""); err != nil {
					t.Fatal(err)
				}
			}
			if got := ft.slept(); len(got) != 0 || s.calls.Load() != 10 {
				t.Fatalf("slept %v over %d calls, want no wait while quota remains", got, s.calls.Load())
			}
		})
	}
}

// TestWaitOnceExhausted: after an answer that says no quota remains, the
// next request waits what the server said (its reset, or Retry-After on
// a refusal; the policy's rate w/q when shorter), and once an answer says
// quota remains again, requests go at once.
func TestWaitOnceExhausted(t *testing.T) {
	inQuota := status(200, "RateLimit", `"api";r=5;t=60`)
	for _, tc := range []struct {
		name  string
		first func(http.ResponseWriter)
		want  []time.Duration
	}{
		{"ietf reset", status(200, "RateLimit", `"api";r=0;t=7`), []time.Duration{7 * time.Second}},
		{"ietf, the policy's rate shorter than the reset", status(200, "RateLimit", `"api";r=0;t=60`, "RateLimit-Policy", `"api";q=50;w=60`), []time.Duration{1200 * time.Millisecond}},
		{"ietf, the reset shorter than the policy's rate", status(200, "RateLimit", `"api";r=0;t=1`, "RateLimit-Policy", `"api";q=10;w=60`), []time.Duration{time.Second}},
		{"draft-06 reset", status(200, "RateLimit-Remaining", "0", "RateLimit-Reset", "12"), []time.Duration{12 * time.Second}},
		{"x-ratelimit epoch reset", status(200, "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "1700000030"), []time.Duration{30 * time.Second}},
		{"429 Retry-After, then quota", status(429, "Retry-After", "5", "RateLimit", `"api";r=0;t=5`), []time.Duration{5 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, s := serve(t, tc.first, inQuota)
			ft := newFakeTime()
			tr := newTransport(t, ft)
			for range 4 {
				resp, err := do(t, tr, context.Background(), "GET", srv.URL, "")
				if err != nil || resp.StatusCode != http.StatusOK {
					t.Fatalf("%v, %v", resp, err)
				}
			}
			got := ft.slept()
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("slept %v over %d calls, want %v: one wait of the server's time, then none while quota remains", got, s.calls.Load(), tc.want)
			}
		})
	}
}

// TestPacedAtThePolicysRate: while the server keeps saying the quota is
// exhausted, requests are spaced by the policy's rate.
func TestPacedAtThePolicysRate(t *testing.T) {
	srv, _ := serve(t, status(200, "RateLimit", `"api";r=0;t=60`, "RateLimit-Policy", `"api";q=20;w=60`))
	ft := newFakeTime()
	tr := newTransport(t, ft)
	for range 4 {
		if _, err := do(t, tr, context.Background(), "GET", srv.URL, ""); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := fmt.Sprint(ft.slept()), fmt.Sprint([]time.Duration{3 * time.Second, 3 * time.Second, 3 * time.Second}); got != want {
		t.Fatalf("slept %v, want %v (60s/20 before each request after the first)", got, want)
	}
}
