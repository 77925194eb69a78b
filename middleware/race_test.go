package middleware_test

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/middleware"
	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/store/storetest"
)

// raceThroughMiddleware sends Goroutines×Attempts requests from one client
// IP through each handler concurrently and returns how many reached the
// wrapped handler.
func raceThroughMiddleware(t *testing.T, handlers []http.Handler) int64 {
	var wg sync.WaitGroup
	var other atomic.Int64
	var admitted atomic.Int64
	for _, h := range handlers {
		for range storetest.Goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range storetest.Attempts {
					req := httptest.NewRequest(http.MethodGet, "/", nil)
					req.RemoteAddr = "198.51.100.7:4000"
					rec := httptest.NewRecorder()
					h.ServeHTTP(rec, req)
					switch rec.Code {
					case http.StatusOK:
						admitted.Add(1)
					case http.StatusTooManyRequests:
					default:
						other.Add(1)
					}
				}
			}()
		}
	}
	wg.Wait()
	if n := other.Load(); n > 0 {
		t.Fatalf("%d requests got neither 200 nor 429", n)
	}
	return admitted.Load()
}

func TestEightMiddlewareInstancesShareOneMemstore(t *testing.T) {
	store, _ := newMemstore(t)
	set := rules.MustNew(perIP(sluice.PerHour(1).WithBurst(storetest.Capacity)))
	handlers := make([]http.Handler, storetest.Clients)
	for i := range handlers {
		handlers[i] = middleware.Limit(store, set)(&okHandler{})
	}
	if got := raceThroughMiddleware(t, handlers); got != storetest.Capacity {
		t.Fatalf("admitted %d, want exactly %d", got, storetest.Capacity)
	}
}
