package redisstore_test

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/store/redisstore"
)

// policyEvents records eviction-policy readings.
type policyEvents struct {
	mu       sync.Mutex
	readings []bool // evicting, in order
}

func (*policyEvents) BreakerChanged(string, sluice.BreakerState, sluice.BreakerState) {}
func (*policyEvents) ScriptReloaded(string)                                           {}
func (p *policyEvents) EvictionPolicyChecked(_, _ string, evicting bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.readings = append(p.readings, evicting)
}

func (p *policyEvents) last() (evicting, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.readings) == 0 {
		return false, false
	}
	return p.readings[len(p.readings)-1], true
}

// TestEvictionPolicyWatched: the policy is read at start and then
// periodically; a change to an evicting policy is logged once as a
// warning and reported to Events, and a change back is reported too.
func TestEvictionPolicyWatched(t *testing.T) {
	srv := redistest.Start(t)
	events := &policyEvents{}
	logs := &logLines{}
	s, err := redisstore.New(newClient(t, srv.Addr), redisstore.Config{
		Secret: []byte("test secret"), Logger: slog.New(logs), Events: events,
		PolicyCheckInterval: 20 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	redisstore.WaitStartupCheck(s)
	wait := func(want bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			if got, ok := events.last(); ok && got == want {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		got, _ := events.last()
		t.Fatalf("evicting = %v after 5 s, want %v", got, want)
	}
	wait(false) // redistest's server: no memory limit
	for _, args := range [][]string{{"CONFIG", "SET", "maxmemory", "100mb"}, {"CONFIG", "SET", "maxmemory-policy", "allkeys-lru"}} {
		if _, err := redistest.Do(srv.Addr, args...); err != nil {
			t.Fatal(err)
		}
	}
	wait(true)
	time.Sleep(100 * time.Millisecond) // several more checks: still one warning
	if _, err := redistest.Do(srv.Addr, "CONFIG", "SET", "maxmemory-policy", "noeviction"); err != nil {
		t.Fatal(err)
	}
	wait(false)
	logs.mu.Lock()
	defer logs.mu.Unlock()
	warnings := 0
	for _, m := range logs.msgs {
		if m == "redisstore: Redis may evict rate-limit keys under memory pressure, and an evicted bucket forgets what it consumed; set maxmemory-policy noeviction or give the limiter its own Redis" {
			warnings++
		}
	}
	if warnings != 1 {
		t.Errorf("%d warnings about the eviction policy, want 1 (logs: %q)", warnings, logs.msgs)
	}
	if !slices.Contains(logs.msgs, "redisstore: Redis no longer evicts rate-limit keys") {
		t.Errorf("no log line when the policy went back to noeviction: %q", logs.msgs)
	}
}
