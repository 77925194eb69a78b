package middleware_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/middleware"
	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/store/memstore"
	"github.com/sluicehq/sluice/store/storetest"
)

// t0 is the fake time tests start at.
var t0 = time.Unix(1_800_000_000, 0)

func newMemstore(t testing.TB) (*memstore.Store, *storetest.Clock) {
	clock := storetest.NewClock(t0)
	s := memstore.New(memstore.Config{Clock: clock})
	t.Cleanup(func() { s.Close(context.Background()) })
	return s, clock
}

func perIP(limit sluice.Limit) rules.Rule {
	return rules.Rule{Name: "per-ip", Key: keyfunc.ClientIP(), Limit: limit}
}

// okHandler counts the requests that reach it.
type okHandler struct{ calls atomic.Int64 }

func (h *okHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.calls.Add(1)
	_, _ = io.WriteString(w, "ok")
}

// serve starts a real HTTP server with lim in front of next.
func serve(t testing.TB, lim func(http.Handler) http.Handler, next http.Handler) *httptest.Server {
	srv := httptest.NewServer(lim(next))
	t.Cleanup(srv.Close)
	return srv
}

func get(t testing.TB, c *http.Client, url string, hdr ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func problem(t testing.TB, resp *http.Response) middleware.Problem {
	t.Helper()
	if ct := resp.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("Content-Type %q, want application/problem+json", ct)
	}
	var p middleware.Problem
	if err := json.NewDecoder(resp.Body).Decode(&p); err != nil {
		t.Fatal(err)
	}
	return p
}

// failingStore fails every call with err.
type failingStore struct{ err error }

func (s failingStore) Take(context.Context, []sluice.Hit, []sluice.Result) error { return s.err }

// recorder collects observed decisions.
type recorder struct {
	ch chan sluice.Decision
}

func newRecorder() *recorder { return &recorder{ch: make(chan sluice.Decision, 1000)} }

func (r *recorder) Observe(_ context.Context, d sluice.Decision) { r.ch <- d }

func (r *recorder) drain() []sluice.Decision {
	var ds []sluice.Decision
	for {
		select {
		case d := <-r.ch:
			ds = append(ds, d)
		default:
			return ds
		}
	}
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
