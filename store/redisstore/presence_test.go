package redisstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/store/redisstore"
)

// waitInstances waits until every store counts want instances.
func waitInstances(t *testing.T, want int, stores ...*redisstore.Store) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		ok := true
		for _, s := range stores {
			ok = ok && s.Instances() == want
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			for i, s := range stores {
				t.Errorf("store %d counts %d instances, want %d", i, s.Instances(), want)
			}
			t.FailNow()
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Stores sharing a Redis count one another; one that closes is counted
// out at once; while Redis is down the last count stands.
func TestInstancesCountedThroughRedis(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	cfg := redisstore.Config{PresenceInterval: 50 * time.Millisecond}
	stores := make([]*redisstore.Store, 3)
	for i := range stores {
		stores[i] = newStoreWith(t, newClient(t, srv.Addr), nil, cfg)
	}
	waitInstances(t, 3, stores...)

	stores[2].Close(context.Background())
	waitInstances(t, 2, stores[:2]...)

	srv.Stop()
	time.Sleep(4 * cfg.PresenceInterval) // several failed refreshes, each keeping the count
	waitInstances(t, 2, stores[:2]...)

	// Another Prefix is another set of buckets, counted apart.
	srv.Restart()
	other := newStoreWith(t, newClient(t, srv.Addr), nil, redisstore.Config{PresenceInterval: 50 * time.Millisecond, Prefix: "other:"})
	waitInstances(t, 1, other)
	waitInstances(t, 2, stores[:2]...)
}

func TestInstancesOff(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	s := newStoreWith(t, newClient(t, srv.Addr), nil, redisstore.Config{PresenceInterval: -1})
	time.Sleep(50 * time.Millisecond)
	if n := s.Instances(); n != 0 {
		t.Fatalf("Instances %d with counting off, want 0", n)
	}
}
