package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/decide"
	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/store/memstore"
	"github.com/sluicehq/sluice/store/storetest"
)

// adminGateway serves the demo API and, on an address of its own, its
// operator API, over store.
func adminGateway(t *testing.T, store sluice.Store) (api *httptest.Server, adminURL string) {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	var limited rules.Source
	// A budget no busy machine misses: these tests are about the operator
	// API, and a store call past the default 50 ms would answer 503 under
	// the built-in rules' fail-closed rule.
	router, err := newRouterWith(store, log, capture(goRules, &limited), decide.WithBudget(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	api = httptest.NewServer(router)
	t.Cleanup(api.Close)
	adminURL, stop := startAdmin(t, store, limited, log)
	t.Cleanup(stop)
	return api, adminURL
}

// startAdmin serves the operator API over store on a free port.
func startAdmin(t *testing.T, store sluice.Store, src rules.Source, log *slog.Logger) (url string, stop func()) {
	t.Helper()
	addr, stop, err := serveAdmin(context.Background(), "127.0.0.1:0", store, src, log, nil)
	if err != nil {
		t.Fatal(err)
	}
	return "http://" + addr.String(), stop
}

func TestAdminIsOffByDefault(t *testing.T) {
	addr, stop, err := serveAdmin(context.Background(), "", memstore.New(memstore.Config{}), nil, slog.Default(), nil)
	if addr != nil || err != nil {
		t.Fatalf("serveAdmin without an address: %v, %v; want nothing served", addr, err)
	}
	stop()
}

// blockingResets is a store whose resets wait for release, and record
// that they finished.
type blockingResets struct {
	sluice.Resetter
	entered, release chan struct{}
	finished         atomic.Bool
}

func (s *blockingResets) Reset(ctx context.Context, hits []sluice.Hit) error {
	close(s.entered)
	<-s.release
	err := s.Resetter.Reset(ctx, hits)
	s.finished.Store(true)
	return err
}

// TestAdminStopWaitsForResets stops the operator API while a /reset is in
// flight: the stop function returns only after that reset finished, so
// the gateway closes its store after it.
func TestAdminStopWaitsForResets(t *testing.T) {
	mem := memstore.New(memstore.Config{Clock: storetest.NewClock(time.Unix(1_800_000_000, 0))})
	t.Cleanup(func() { mem.Close(context.Background()) })
	store := &blockingResets{Resetter: mem, entered: make(chan struct{}), release: make(chan struct{})}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	var limited rules.Source
	if _, err := newRouterWith(store, log, capture(goRules, &limited)); err != nil {
		t.Fatal(err)
	}
	adminURL, stop := startAdmin(t, store, limited, log)
	posted := make(chan int, 1)
	go func() {
		resp, err := http.Post(adminURL+"/reset", "application/json", strings.NewReader(`{"rule":"per-ip","identity":"127.0.0.1"}`))
		if err != nil {
			posted <- 0
			return
		}
		resp.Body.Close()
		posted <- resp.StatusCode
	}()
	<-store.entered
	finishedAtStop := make(chan bool, 1)
	go func() {
		stop()
		finishedAtStop <- store.finished.Load()
	}()
	// Release the reset only once the server has stopped accepting, so
	// that a stop function that did not wait would have returned by now.
	host := strings.TrimPrefix(adminURL, "http://")
	for {
		conn, err := net.Dial("tcp", host)
		if err != nil {
			break
		}
		conn.Close()
		runtime.Gosched()
	}
	close(store.release)
	if !<-finishedAtStop {
		t.Fatal("the operator API's stop function returned before the reset in flight finished")
	}
	if code := <-posted; code != http.StatusOK {
		t.Fatalf("reset in flight at shutdown: status %d, want 200", code)
	}
}

// TestServerOutlastsSlowRequests keeps the write timeout consistent with
// /slow and the shutdown: a request to /slow completes, and a shutdown
// waits long enough for it.
func TestServerOutlastsSlowRequests(t *testing.T) {
	srv := newHTTPServer(http.NotFoundHandler(), slog.Default())
	if srv.WriteTimeout <= maxSlow || srv.WriteTimeout >= shutdownTimeout {
		t.Fatalf("WriteTimeout %v: want above /slow's %v and below the shutdown's %v", srv.WriteTimeout, maxSlow, shutdownTimeout)
	}
}

// TestAdminResetsAClient exhausts the per-ip rule, then unblocks the
// client through the operator API over real HTTP.
func TestAdminResetsAClient(t *testing.T) {
	clock := storetest.NewClock(time.Unix(1_800_000_000, 0))
	store := memstore.New(memstore.Config{Clock: clock})
	t.Cleanup(func() { store.Close(context.Background()) })
	testAdminResetsAClient(t, store)
}

func testAdminResetsAClient(t *testing.T, store sluice.Store) {
	api, adminURL := adminGateway(t, store)
	status := func() int {
		resp, err := http.Get(api.URL + "/items")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for range 50 {
		if s := status(); s != http.StatusOK {
			t.Fatalf("within the limit: %d", s)
		}
	}
	if s := status(); s != http.StatusTooManyRequests {
		t.Fatalf("51st request at 50/min: %d, want 429", s)
	}
	post := func(path, body string) (int, string) {
		resp, err := http.Post(adminURL+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := post("/inspect", `{"rule":"per-ip","identity":"127.0.0.1"}`)
	var got struct {
		Buckets []struct {
			Remaining    int64 `json:"remaining"`
			RetryAfterMS int64 `json:"retry_after_ms"`
		}
	}
	if err := json.Unmarshal([]byte(body), &got); code != 200 || err != nil || len(got.Buckets) != 1 || got.Buckets[0].Remaining != 0 || got.Buckets[0].RetryAfterMS <= 0 {
		t.Fatalf("inspect: %d %s", code, body)
	}
	if code, body := post("/reset", `{"rule":"per-ip","identity":"not an address"}`); code != 400 || !strings.Contains(body, "malformed identity") {
		t.Fatalf("reset of a malformed identity: %d %s", code, body)
	}
	if code, body := post("/reset", `{"rule":"per-planet","identity":"127.0.0.1"}`); code != 404 {
		t.Fatalf("reset of an unknown rule: %d %s", code, body)
	}
	if s := status(); s != http.StatusTooManyRequests {
		t.Fatalf("after refused resets: %d, want still 429", s)
	}
	if code, body := post("/reset", `{"rule":"per-ip","identity":"127.0.0.1"}`); code != 200 || !strings.Contains(body, `"remaining":50`) {
		t.Fatalf("reset: %d %s", code, body)
	}
	if s := status(); s != http.StatusOK {
		t.Fatalf("after the reset: %d, want 200", s)
	}
}
