package middleware_test

import (
	"bytes"
	"errors"
	"github.com/sluicehq/sluice/decide"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/middleware"
	"github.com/sluicehq/sluice/rules"
)

// opsBypass exempts requests carrying X-Ops: secret-ops, up to 3 a minute.
func opsBypass(t *testing.T) *rules.Set {
	t.Helper()
	set, err := rules.MustNew(perIP(sluice.PerMinute(1))).WithBypass(rules.Bypass{
		Name: "ops",
		Identify: func(r *http.Request) (string, bool) {
			return "secret-ops", r.Header.Get("X-Ops") == "secret-ops"
		},
		Limit: sluice.PerMinute(3),
	})
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// syncBuffer is a log destination safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Every bypass use is observed under the entry's name, and the entry's own
// limit bounds it; the rules it skips are not counted.
func TestBypassIsObservedAndLimited(t *testing.T) {
	store, _ := newMemstore(t)
	obs := newRecorder()
	var logs syncBuffer
	srv := serve(t, middleware.Limit(store, opsBypass(t), decide.WithObserver(obs),
		decide.WithLogger(slog.New(slog.NewTextHandler(&logs, nil)))), &okHandler{})

	for i := range 3 {
		resp := get(t, srv.Client(), srv.URL, "X-Ops", "secret-ops")
		if resp.StatusCode != http.StatusOK || resp.Header.Get("RateLimit-Policy") != "" {
			t.Fatalf("bypassed request %d: %d, RateLimit-Policy %q", i, resp.StatusCode, resp.Header.Get("RateLimit-Policy"))
		}
	}
	resp := get(t, srv.Client(), srv.URL, "X-Ops", "secret-ops")
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "20" {
		t.Fatalf("4th bypassed request: %d, Retry-After %q; want 429 after 20 s", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if p := problem(t, resp); len(p.ViolatedPolicies) != 0 {
		t.Fatalf("the bypass entry appears in the problem: %+v", p)
	}
	// The per-IP rule was never charged: a request without the bypass passes.
	if resp := get(t, srv.Client(), srv.URL); resp.StatusCode != http.StatusOK {
		t.Fatalf("ordinary request: %d", resp.StatusCode)
	}

	var got []string
	for _, d := range obs.drain() {
		got = append(got, d.Rule+"="+d.Outcome.String())
	}
	want := "ops=bypassed ops=bypassed ops=bypassed ops=denied per-ip=allowed"
	if strings.Join(got, " ") != want {
		t.Fatalf("observed %v, want %s", got, want)
	}
	if strings.Contains(logs.String(), "secret-ops") {
		t.Fatalf("the log names the identity:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), `msg="sluice: request exempted from the rate-limit rules by a bypass entry" bypass=ops suppressed=0`) {
		t.Fatalf("no bypass record:\n%s", logs.String())
	}
}

// A flood of bypassed requests logs about one record a second, each
// carrying how many it stands for.
func TestBypassLogIsSampled(t *testing.T) {
	store, _ := newMemstore(t)
	set, err := rules.MustNew(perIP(sluice.PerMinute(1))).WithBypass(rules.Bypass{
		Name:     "monitoring",
		Identify: func(*http.Request) (string, bool) { return "probe", true },
		Limit:    sluice.PerHour(1).WithBurst(100_000),
	})
	if err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	h := middleware.Limit(store, set, decide.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))(&okHandler{})
	start := time.Now()
	const n = 2000
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range n / 4 {
				h.ServeHTTP(discard{}, newRequest())
			}
		}()
	}
	wg.Wait()
	records := strings.Count(logs.String(), "bypass=monitoring")
	if limit := 1 + int(time.Since(start)/time.Second); records < 1 || records > limit {
		t.Fatalf("%d log records for %d bypassed requests in %v, want 1 to %d", records, n, time.Since(start), limit)
	}
}

// A store failure under a bypass applies the entry's on_fail policy, by
// default local: the entry's limit decided in process.
func TestBypassStoreFailure(t *testing.T) {
	obs := newRecorder()
	h := middleware.Limit(failingStore{err: &sluice.StoreError{Op: "test", Kind: sluice.ErrUnavailable}}, opsBypass(t),
		decide.WithObserver(obs), decide.WithLogger(quietLogger()))(&okHandler{})
	req := newRequest()
	req.Header.Set("X-Ops", "secret-ops")
	h.ServeHTTP(discard{}, req)
	ds := obs.drain()
	if len(ds) != 1 || ds[0].Rule != "ops" || ds[0].Outcome != sluice.OutcomeLocal || !errors.Is(ds[0].Err, sluice.ErrUnavailable) {
		t.Fatalf("decisions %+v", ds)
	}
}

func newRequest() *http.Request {
	req, _ := http.NewRequest(http.MethodGet, "http://example.test/", nil)
	req.RemoteAddr = "192.0.2.1:1234"
	return req
}
