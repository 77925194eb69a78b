package rulefile_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/rules/rulefile"
	"github.com/sluicehq/sluice/store/memstore"
	"github.com/sluicehq/sluice/store/storetest"
)

// bucketProbe takes from the watcher's current rules for one client.
type bucketProbe struct {
	t     *testing.T
	w     *rulefile.Watcher
	store *memstore.Store
	path  string
}

func newBucketProbe(t *testing.T, content string) *bucketProbe {
	t.Helper()
	path := filepath.Join(t.TempDir(), "rules.yaml")
	replace(t, path, content)
	w, err := rulefile.Watch(path, rulefile.LoadConfig{}, rulefile.WatchConfig{Interval: -1, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	store := memstore.New(memstore.Config{Clock: storetest.NewClock(time.Unix(1_800_000_000, 0))})
	t.Cleanup(func() { store.Close(context.Background()); w.Close() })
	return &bucketProbe{t: t, w: w, store: store, path: path}
}

// take sends one request from 192.0.2.1 and returns its result.
func (p *bucketProbe) take() sluice.Result {
	p.t.Helper()
	var m rules.Matched
	if err := p.w.Current().Resolve(httptest.NewRequest("GET", "/", nil), &m); err != nil {
		p.t.Fatal(err)
	}
	out := make([]sluice.Result, 1)
	if err := p.store.Take(context.Background(), m.Hits, out); err != nil {
		p.t.Fatal(err)
	}
	return out[0]
}

func (p *bucketProbe) reload(content string) {
	p.t.Helper()
	replace(p.t, p.path, content)
	if err := p.w.Reload(); err != nil {
		p.t.Fatal(err)
	}
}

const tokenBucket = "rules:\n  - {name: per-ip, key: ip, limit: {rate: 10, per: 1m, burst: %d}}\n"

func tb(burst int) string { return fmt.Sprintf(tokenBucket, burst) }

// A smaller burst applies at once: the bucket never holds more than the
// new burst. (10 a minute is one token every 6 s; the clock stands still.)
func TestReloadShrinksTokenBucketAtOnce(t *testing.T) {
	p := newBucketProbe(t, tb(10))
	for range 3 {
		p.take()
	}
	if r := p.take(); !r.Allowed || r.Remaining != 6 {
		t.Fatalf("4th of burst 10: %+v", r)
	}
	// 4 taken: the bucket is 24 s short of full. With burst 5 (30 s of
	// capacity) 6 s remain: one token.
	p.reload(tb(5))
	r := p.take()
	if !r.Allowed || r.Remaining != 0 || r.Remaining > 5 {
		t.Fatalf("first request after shrinking to burst 5: %+v, want allowed with 0 left", r)
	}
	if r := p.take(); r.Allowed || r.RetryAfter != 6*time.Second {
		t.Fatalf("second request after shrinking: %+v, want refused for 6 s", r)
	}
	// Shrinking below what is already used refuses until the bucket has
	// refilled below the new burst; it never holds more than the burst.
	p.reload(tb(2))
	if r := p.take(); r.Allowed || r.Remaining != 0 || r.RetryAfter != 24*time.Second {
		t.Fatalf("after shrinking to burst 2: %+v, want refused for 24 s", r)
	}
	// Growing the burst gives the difference at once.
	p.reload(tb(20))
	if r := p.take(); !r.Allowed || r.Remaining != 14 || r.Remaining > 20 {
		t.Fatalf("after growing to burst 20: %+v, want 14 left", r)
	}
}

// A changed algorithm starts fresh buckets: the algorithm is part of the
// store's key.
func TestReloadAlgorithmChangeStartsFresh(t *testing.T) {
	p := newBucketProbe(t, tb(3))
	for range 3 {
		p.take()
	}
	if r := p.take(); r.Allowed {
		t.Fatalf("4th of burst 3 allowed: %+v", r)
	}
	p.reload("rules:\n  - {name: per-ip, key: ip, algorithm: fixed_window, limit: {rate: 3, per: 1m}}\n")
	if r := p.take(); !r.Allowed || r.Remaining != 2 {
		t.Fatalf("first request under fixed_window: %+v, want a fresh window", r)
	}
}

// Window algorithms keep their counts and compare them with the new rate.
func TestReloadWindowKeepsCount(t *testing.T) {
	const fw = "rules:\n  - {name: per-ip, key: ip, algorithm: fixed_window, limit: {rate: %d, per: 1m}}\n"
	p := newBucketProbe(t, fmt.Sprintf(fw, 10))
	for range 6 {
		if r := p.take(); !r.Allowed {
			t.Fatalf("refused under 10: %+v", r)
		}
	}
	p.reload(fmt.Sprintf(fw, 5))
	if r := p.take(); r.Allowed {
		t.Fatalf("7th request after lowering the limit to 5: %+v, want refused", r)
	}
	p.reload(fmt.Sprintf(fw, 8))
	if r := p.take(); !r.Allowed || r.Remaining != 1 {
		t.Fatalf("after raising it to 8: %+v, want the 7th allowed with 1 left", r)
	}
}
