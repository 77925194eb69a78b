package sluiceotel_test

import (
	"context"
	"github.com/sluicehq/sluice/decide"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/middleware"
	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/store/lease"
	"github.com/sluicehq/sluice/store/memstore"
	"github.com/sluicehq/sluice/store/redisstore"
)

// get sends n GET requests through h, each from its own address, and
// returns their statuses.
func get(h http.Handler, n int, from ...string) []int {
	var codes []int
	for i := range n {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = "203.0.113.7:1"
		if i < len(from) {
			r.RemoteAddr = from[i]
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		codes = append(codes, w.Code)
	}
	return codes
}

var ok = http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})

// TestMiddlewareOnMemstore: a recorder given to the middleware and to the
// in-process store records the middleware's decisions, its store calls
// and the store's evictions.
func TestMiddlewareOnMemstore(t *testing.T) {
	rec, reader := newRecorder(t)
	store := memstore.New(memstore.Config{MaxBuckets: 1, SweepInterval: -1, Events: rec})
	defer store.Close(context.Background())
	set := rules.MustNew(rules.Rule{Name: "per-ip", Key: keyfunc.ClientIP(), Limit: sluice.PerMinute(1)})
	h := middleware.Limit(store, set, decide.WithObserver(rec))(ok)
	if got := get(h, 3, "203.0.113.7:1", "203.0.113.7:1", "203.0.113.8:1"); !slices.Equal(got, []int{200, 429, 200}) {
		t.Fatalf("statuses %v", got)
	}
	got := collect(t, reader)
	want := []string{"sluice.outcome=allowed,sluice.rule=per-ip: 2", "sluice.outcome=denied,sluice.rule=per-ip: 1"}
	if p := got["sluice.decisions"].points; !slices.Equal(p, want) {
		t.Errorf("decisions %q, want %q", p, want)
	}
	if p := got["sluice.store.call.duration"].points; len(p) != 1 || !strings.HasPrefix(p[0], ": count=3 ") {
		t.Errorf("store calls %q, want 3 without error.type", p)
	}
	if p := got["sluice.memstore.evictions"].points; !slices.Equal(p, []string{": 1"}) {
		t.Errorf("evictions %q, want 1", p)
	}
}

// TestLeaseStore: a recorder given as a lease store's observer records
// its refills and its give-backs: every token refilled is either used by a
// request or given back at Close.
func TestLeaseStore(t *testing.T) {
	rec, reader := newRecorder(t)
	backing := memstore.New(memstore.Config{SweepInterval: -1})
	defer backing.Close(context.Background())
	ls, err := lease.New(backing, lease.Config{Observer: rec, SweepInterval: -1, Instances: 1})
	if err != nil {
		t.Fatal(err)
	}
	set := rules.MustNew(rules.Rule{Name: "leased", Key: keyfunc.ClientIP(), Limit: sluice.PerSecond(1000),
		Lease: sluice.LeasePolicy{Enabled: true, MaxLease: 10}})
	h := middleware.Limit(ls, set, decide.WithObserver(rec))(ok)
	const requests = 20
	for i, code := range get(h, requests) {
		if code != http.StatusOK {
			t.Fatalf("request %d: %d", i, code)
		}
	}
	if err := ls.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := collect(t, reader)
	value := func(name string) int64 {
		t.Helper()
		p := got[name].points
		if len(p) != 1 || !strings.HasPrefix(p[0], "sluice.rule=leased: ") {
			t.Fatalf("%s: %q, want one point of rule leased", name, p)
		}
		v, err := strconv.ParseInt(strings.TrimPrefix(p[0], "sluice.rule=leased: "), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	refills, refilled, returned := value("sluice.lease.refills"), value("sluice.lease.tokens.refilled"), value("sluice.lease.tokens.returned")
	if refills < 2 || refilled-returned != requests || returned < 1 {
		t.Errorf("%d refills took %d tokens, %d given back: want the %d requests' tokens used, the rest given back",
			refills, refilled, returned, requests)
	}
	if p := got["sluice.lease.keys"].points; len(p) != 1 {
		t.Errorf("lease keys %q, want the count of the last sweep", p)
	}
}

// TestRedisStore: a recorder set as the Redis store's Config.Events, the
// single hook, records the decisions of a middleware on that store (which
// gets it as the store's observer), its store calls, the endpoint's
// eviction policy and a script reload after SCRIPT FLUSH.
func TestRedisStore(t *testing.T) {
	t.Parallel()
	rec, reader := newRecorder(t)
	store, client := redisStore(t, redisstore.Config{Events: rec})
	set := rules.MustNew(rules.Rule{Name: "per-ip", Key: keyfunc.ClientIP(), Limit: sluice.PerMinute(2)})
	h := middleware.Limit(store, set)(ok) // no WithObserver: the store's
	if got := get(h, 3); !slices.Equal(got, []int{200, 200, 429}) {
		t.Fatalf("statuses %v", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := client.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if got := get(h, 1, "203.0.113.9:1"); !slices.Equal(got, []int{200}) {
		t.Fatalf("after SCRIPT FLUSH: %v", got)
	}
	got := collect(t, reader)
	want := []string{"sluice.outcome=allowed,sluice.rule=per-ip: 3", "sluice.outcome=denied,sluice.rule=per-ip: 1"}
	if p := got["sluice.decisions"].points; !slices.Equal(p, want) {
		t.Errorf("decisions %q, want %q", p, want)
	}
	if p := got["sluice.store.call.duration"].points; len(p) != 1 || !strings.HasPrefix(p[0], ": count=4 ") {
		t.Errorf("store calls %q, want 4 without error.type", p)
	}
	if p := got["sluice.store.script.reloads"].points; len(p) != 1 || !strings.HasSuffix(p[0], ": 1") {
		t.Errorf("script reloads %q, want 1", p)
	}
	if p := got["sluice.store.evicting"].points; len(p) != 1 || !strings.Contains(p[0], "sluice.store.eviction_policy=noeviction") || !strings.HasSuffix(p[0], ": 0") {
		t.Errorf("evicting %q, want noeviction: 0", p)
	}
}
