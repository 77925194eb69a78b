package redisstore

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sluicehq/sluice"
)

// TestNamedIsKey: named gives the Redis key key gives, boxed alike, for
// keys met once, keys met again (found in recent), keys sharing a slot,
// and the hits recent never holds.
func TestNamedIsKey(t *testing.T) {
	k := newKeyer(defaultPrefix, []byte("named"))
	plain := func(key string) sluice.Hit { return sluice.Hit{Key: key, Limit: sluice.PerSecond(10)} }
	var hits []sluice.Hit
	for i := range 3 * recentKeys {
		hits = append(hits, plain(fmt.Sprint("user:", i)))
	}
	hits = append(hits,
		plain(""),
		plain(strings.Repeat("k", maxRecentKey+1)),
		sluice.Hit{Key: "user:0", Algorithm: sluice.SlidingWindow, Limit: sluice.PerSecond(10)},
		sluice.Hit{Key: "user:0", Group: "g", Limit: sluice.PerSecond(10)},
	)
	for round := range 4 {
		for i := range hits {
			h := &hits[i]
			want := k.key(h)
			for range 3 { // a key met again, in a row
				got, boxed := k.named(h)
				if got != want || boxed != any(want) {
					t.Fatalf("round %d, hit %q (%v, group %q): named = %q, %v; want %q", round, h.Key, h.Algorithm, h.Group, got, boxed, want)
				}
			}
		}
	}
}

// TestNamedFindsAHotKey: a key met again and again is found in recent (no
// allocation); keys met once each never enter it.
func TestNamedFindsAHotKey(t *testing.T) {
	k := newKeyer(defaultPrefix, []byte("named"))
	hot := sluice.Hit{Key: "user:hot", Limit: sluice.PerSecond(10)}
	k.named(&hot)
	k.named(&hot)
	if n := testing.AllocsPerRun(100, func() { k.named(&hot) }); n != 0 {
		t.Fatalf("a hot key: %v allocations a call, want 0", n)
	}
	// A spread of keys met once each, twice over: none enters (which
	// would allocate), and the hot key stays.
	spread := make([]sluice.Hit, 10_000)
	for i := range spread {
		spread[i] = sluice.Hit{Key: fmt.Sprint("user:", i), Limit: sluice.PerSecond(10)}
	}
	for range 2 {
		for i := range spread {
			k.named(&spread[i])
		}
	}
	held := 0
	for i := range k.recent {
		if n := k.recent[i].named.Load(); n != nil && n.hit != hot.Key {
			held++
		}
	}
	if held > 0 {
		t.Fatalf("%d keys met once entered recent", held)
	}
	if n := testing.AllocsPerRun(100, func() { k.named(&hot) }); n != 0 {
		t.Fatalf("the hot key after the spread: %v allocations a call, want 0", n)
	}
}
