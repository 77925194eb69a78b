package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/middleware"
	"github.com/sluicehq/sluice/store/memstore"
	"github.com/sluicehq/sluice/store/storetest"
)

// adminGateway serves the demo API and, on an address of its own, its
// operator API, over store.
func adminGateway(t *testing.T, store sluice.Store) (api *httptest.Server, adminURL string) {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	var limited middleware.Source
	router, err := newRouterWith(store, log, capture(goRules, &limited))
	if err != nil {
		t.Fatal(err)
	}
	api = httptest.NewServer(router)
	t.Cleanup(api.Close)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	addr, err := serveAdmin(ctx, "127.0.0.1:0", store, limited, log, nil)
	if err != nil {
		t.Fatal(err)
	}
	return api, "http://" + addr.String()
}

func TestAdminIsOffByDefault(t *testing.T) {
	addr, err := serveAdmin(context.Background(), "", memstore.New(memstore.Config{}), nil, slog.Default(), nil)
	if addr != nil || err != nil {
		t.Fatalf("serveAdmin without an address: %v, %v; want nothing served", addr, err)
	}
}

// TestAdminResetsAClient exhausts the per-ip rule, then unblocks the
// client through the operator API over real HTTP.
func TestAdminResetsAClient(t *testing.T) {
	clock := storetest.NewClock(time.Unix(1_800_000_000, 0))
	store := memstore.New(memstore.Config{Clock: clock})
	t.Cleanup(func() { store.Close() })
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
