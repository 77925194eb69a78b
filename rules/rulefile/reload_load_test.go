package rulefile_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/middleware"
	"github.com/sluicehq/sluice/rules/rulefile"
	"github.com/sluicehq/sluice/store/memstore"
)

// generation returns a rule file whose two rules are named after gen.
func generation(gen string) string {
	return "rules:\n" +
		"  - {name: " + gen + "-per-ip, key: ip, limit: {rate: 1000000, per: 1m}}\n" +
		"  - {name: " + gen + "-global, key: global, limit: {rate: 1000000, per: 1m}}\n"
}

// genStore checks that every Take holds the two hits of one generation,
// never a mix, and counts the Takes of each.
type genStore struct {
	inner sluice.Store
	takes [2]atomic.Int64 // generation a, b
	mixed atomic.Int64
}

func (s *genStore) Take(ctx context.Context, hits []sluice.Hit, out []sluice.Result) error {
	gen := -1
	for _, h := range hits {
		_, rest, _ := strings.Cut(h.Key, ":") // BucketKey: length, ':', rule name ...
		g := -1
		switch {
		case strings.HasPrefix(rest, "a-"):
			g = 0
		case strings.HasPrefix(rest, "b-"):
			g = 1
		}
		if g < 0 || gen >= 0 && g != gen {
			s.mixed.Add(1)
		}
		gen = g
	}
	if len(hits) != 2 {
		s.mixed.Add(1)
	}
	if gen >= 0 {
		s.takes[gen].Add(1)
	}
	return s.inner.Take(ctx, hits, out)
}

// Requests in flight across reloads are each decided by the old rules or
// the new, never a mix: the limiter reads the watcher's current Set once
// per request and the watcher swaps whole Sets.
func TestReloadUnderLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rules.yaml")
	replace(t, path, generation("a"))
	w, err := rulefile.WatchTicks(path, rulefile.LoadConfig{}, rulefile.WatchConfig{Logger: quiet()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	mem := memstore.New(memstore.Config{})
	defer mem.Close(context.Background())
	store := &genStore{inner: mem}
	h := middleware.Limit(store, w)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))

	var stop atomic.Bool
	var bad atomic.Int64
	var wg sync.WaitGroup
	for range 2 * runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
				if rec.Code != http.StatusOK {
					bad.Add(1)
				}
			}
		}()
	}
	const reloads = 40
	for i := range reloads {
		next := 1 - i%2 // b, a, b, ...
		before := store.takes[next].Load()
		replace(t, path, generation([]string{"a", "b"}[next]))
		if i%2 == 0 {
			w.Poll()
		} else if err := w.Reload(); err != nil {
			t.Fatal(err)
		}
		// Wait until requests run under the new generation.
		deadline := time.Now().Add(10 * time.Second)
		for store.takes[next].Load() == before {
			if time.Now().After(deadline) {
				stop.Store(true)
				wg.Wait()
				t.Fatalf("reload %d: no request decided by the new rules", i)
			}
			runtime.Gosched()
		}
	}
	stop.Store(true)
	wg.Wait()
	if n := store.mixed.Load(); n > 0 {
		t.Fatalf("%d requests were decided by a mix of generations", n)
	}
	if n := bad.Load(); n > 0 {
		t.Fatalf("%d requests did not get 200", n)
	}
	t.Logf("%d requests under a, %d under b, %d reloads", store.takes[0].Load(), store.takes[1].Load(), reloads)
}
