package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sluicehq/sluice/store/memstore"
	"github.com/sluicehq/sluice/store/storetest"
)

// TestFloodOfIdentities sends the gateway a flood of clients each seen
// once (a new IPv6 /64 and a new API key per request) at a store bounded
// at 500 buckets: every request is answered, none refused for want of
// room, and the store never holds more than its bound.
func TestFloodOfIdentities(t *testing.T) {
	const bound, requests = 500, 5000
	clock := storetest.NewClock(time.Unix(1_800_000_000, 0))
	store := memstore.New(memstore.Config{Clock: clock, SweepInterval: -1, MaxBuckets: bound})
	defer store.Close(context.Background())
	router, err := newRouter(store, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	for i := range requests {
		clock.Advance(20 * time.Millisecond) // under the global rule's 5,000 a minute
		req := httptest.NewRequest(http.MethodGet, "/items", nil)
		req.RemoteAddr = fmt.Sprintf("[2001:db8:%x:%x::1]:443", i>>16, i&0xffff)
		req.Header.Set("X-API-Key", fmt.Sprintf("key-%d", i))
		rec := httptest.NewRecorder()
		router.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Fatalf("request %d, a new client: status %d: %s", i, rec.Code, rec.Body)
		}
		if i%500 == 0 {
			if n := store.Len(); n > bound {
				t.Fatalf("after %d requests the store holds %d buckets, bound %d", i+1, n, bound)
			}
		}
	}
	if store.Evicted() == 0 {
		t.Fatalf("no eviction after %d new clients with a bound of %d", requests, bound)
	}
	t.Logf("%d new clients: %d buckets held, %d evicted", requests, store.Len(), store.Evicted())
}
