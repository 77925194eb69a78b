package middleware_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/middleware"
	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/store/memstore"
)

// headerSink is a ResponseWriter that keeps only its headers, so the
// benchmark measures the middleware rather than a recorder.
type headerSink struct{ h http.Header }

func (w *headerSink) Header() http.Header         { return w.h }
func (w *headerSink) Write(p []byte) (int, error) { return len(p), nil }
func (w *headerSink) WriteHeader(int)             {}

// wrapped hides a store's type: the middleware gives its calls the
// budget's deadline, as it does a Redis store's.
type wrapped struct{ sluice.Store }

// BenchmarkHandler measures what the middleware adds to a request: one
// per-API-key rule over 1k keys, every request admitted, headers written.
// "memstore" calls get no deadline; "other store" is the same memstore
// behind a wrapper, so its calls get the budget's deadline (a call context
// sharing its tick's timer: see decide.WithBudget).
func BenchmarkHandler(b *testing.B) {
	set := rules.MustNew(rules.Rule{Name: "per-key", Key: keyfunc.Header("X-API-Key"),
		Limit: sluice.PerSecond(1_000_000).WithBurst(1 << 30)})
	reqs := make([]*http.Request, 1000)
	for i := range reqs {
		reqs[i] = httptest.NewRequest(http.MethodGet, "/", nil)
		reqs[i].Header.Set("X-API-Key", "key-"+strconv.Itoa(i))
	}
	next := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	for _, bc := range []struct {
		name string
		wrap func(*memstore.Store) sluice.Store
	}{
		{"memstore", func(s *memstore.Store) sluice.Store { return s }},
		{"other store", func(s *memstore.Store) sluice.Store { return wrapped{s} }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			store := memstore.New(memstore.Config{})
			defer store.Close(context.Background())
			h := middleware.Limit(bc.wrap(store), set)(next)
			w := &headerSink{h: http.Header{}}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				clear(w.h)
				h.ServeHTTP(w, reqs[i%len(reqs)])
				i++
			}
		})
	}
}
