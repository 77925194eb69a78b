package main

import (
	"context"
	"github.com/sluicehq/sluice/decide"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/middleware"
	"github.com/sluicehq/sluice/rules/rulefile"
	"github.com/sluicehq/sluice/store/memstore"
	"github.com/sluicehq/sluice/store/storetest"
)

// newFileServer serves the demo on the rules of a copy of rules.yaml, on a
// memstore whose clock stands still, and returns the copy's path and the
// watcher.
func newFileServer(t *testing.T, opts ...middleware.Option) (*httptest.Server, string, *rulefile.Watcher) {
	t.Helper()
	data, err := os.ReadFile("rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	store := memstore.New(memstore.Config{Clock: storetest.NewClock(time.Unix(1_800_000_000, 0))})
	t.Cleanup(func() { store.Close(context.Background()) })
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	var w *rulefile.Watcher
	router, err := newRouterWith(store, log, fileRules(path, log, &w), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	srv := httptest.NewServer(router)
	t.Cleanup(srv.Close)
	return srv, path, w
}

// The file gives an anonymous client what the built-in rules give: the
// same policies, the 51st quick request refused, on every route.
func TestRuleFileTripsLikeTheBuiltInRules(t *testing.T) {
	for _, path := range []string{"/", "/items", "/items/42", "/me"} {
		t.Run(path, func(t *testing.T) {
			srv, _, _ := newFileServer(t)
			first := get(t, srv, path)
			if got, want := first.Header.Get("RateLimit-Policy"), `"per-ip";q=50;w=60, "global";q=5000;w=60;sluice-burst=500`; got != want {
				t.Errorf("RateLimit-Policy %q, want %q", got, want)
			}
			n, resp := untilDenied(t, srv, 99, path)
			if n+1 != 51 {
				t.Errorf("request %d refused, want the 51st", n+1)
			}
			checkDenied(t, resp, "per-ip", "2")
		})
	}
}

func TestRuleFilePlans(t *testing.T) {
	srv, _, _ := newFileServer(t)
	n, resp := untilDenied(t, srv, 60, "/items", "X-API-Key", "key-free")
	if n != 21 {
		t.Errorf("free key: request %d refused, want the 21st", n)
	}
	checkDenied(t, resp, "per-api-key", "3")

	srv, _, _ = newFileServer(t) // a fresh per-IP budget
	n, resp = untilDenied(t, srv, 60, "/items", "X-API-Key", "key-pro", "X-Plan", "pro")
	if n != 41 {
		t.Errorf("pro key: request %d refused, want the 41st", n)
	}
	checkDenied(t, resp, "per-api-key-pro", "2") // 40 a minute: one every 1.5 s
}

// The partner's key has its override's 30 a minute on the free plan;
// other free keys the rule's 20.
func TestRuleFileOverride(t *testing.T) {
	srv, _, _ := newFileServer(t)
	n, resp := untilDenied(t, srv, 60, "/items", "X-API-Key", "demo-partner-key")
	if n != 31 {
		t.Errorf("partner key: request %d refused, want the 31st", n)
	}
	checkDenied(t, resp, "per-api-key", "2") // 30 a minute: one every 2 s
	if resp := get(t, srv, "/items", "X-API-Key", "key-free"); resp.StatusCode != http.StatusOK ||
		resp.Header.Get("RateLimit-Policy") != `"per-ip";q=50;w=60, "per-api-key";q=20;w=60, "global";q=5000;w=60;sluice-burst=500` {
		t.Errorf("another free key: %d, RateLimit-Policy %q", resp.StatusCode, resp.Header.Get("RateLimit-Policy"))
	}
}

func TestRuleFileUserEndpoint(t *testing.T) {
	srv, _, _ := newFileServer(t)
	for i := 1; i <= 10; i++ {
		if resp := get(t, srv, "/items/"+strconv.Itoa(i), "X-User", "alice"); resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d: %d", i, resp.StatusCode)
		}
	}
	checkDenied(t, get(t, srv, "/items/99", "X-User", "alice"), "per-user-endpoint", "6")
	if resp := get(t, srv, "/items", "X-User", "alice"); resp.StatusCode != http.StatusOK {
		t.Fatalf("other endpoint: %d", resp.StatusCode)
	}
}

// observed collects the decisions of the rules named.
type observed struct {
	mu  sync.Mutex
	got map[string]int // "rule=outcome" -> count
}

func (o *observed) Observe(_ context.Context, d sluice.Decision) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.got[d.Rule+"="+d.Outcome.String()]++
}

func (o *observed) count(key string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.got[key]
}

// The ops key skips the rules (it gets past the per-IP limit) within its
// own limit, every use observed; the shadow rule only counts.
func TestRuleFileBypassAndShadow(t *testing.T) {
	obs := &observed{got: map[string]int{}}
	srv, _, _ := newFileServer(t, decide.WithObserver(obs))
	for i := 1; i <= 100; i++ {
		resp := get(t, srv, "/items/7", "X-API-Key", "demo-ops-key")
		if resp.StatusCode != http.StatusOK || resp.Header.Get("RateLimit") != "" {
			t.Fatalf("ops request %d: %d, RateLimit %q", i, resp.StatusCode, resp.Header.Get("RateLimit"))
		}
	}
	if resp := get(t, srv, "/items/7", "X-API-Key", "demo-ops-key"); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("101st ops request in the same instant: %d, want 429", resp.StatusCode)
	}
	if got := obs.count("ops-tooling=bypassed"); got != 100 {
		t.Fatalf("%d bypassed decisions, want 100", got)
	}
	for range 25 {
		get(t, srv, "/items/7")
	}
	if obs.count("item-lookups-trial=shadow_denied") != 5 || obs.count("per-ip=denied") != 0 {
		t.Fatalf("decisions %v", obs.got)
	}
}

// The watcher swaps the rules in place.
func TestRuleFileReload(t *testing.T) {
	srv, path, w := newFileServer(t)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(data), "limit: {rate: 50, per: 1m}", "limit: {rate: 5, per: 1m}", 1)
	if err := os.WriteFile(path, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := w.Reload(); err != nil {
		t.Fatal(err)
	}
	if n, _ := untilDenied(t, srv, 10, "/"); n != 6 {
		t.Fatalf("after the reload, request %d refused, want the 6th", n)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(edited, "rate: 5,", "rate: five,", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := w.Reload(); err == nil || !strings.Contains(err.Error(), `rule "per-ip": limit.rate`) {
		t.Fatalf("bad file: %v", err)
	}
	if got := w.Current().Rules()[0].Limit; got != sluice.PerMinute(5) {
		t.Fatalf("the last good rules did not stay: %v", got)
	}
}

// docs/rules.md documents the file format with this very file.
func TestDocsShowRulesYAML(t *testing.T) {
	doc, err := os.ReadFile("../../docs/rules.md")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile("rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "```yaml\n"+string(data)+"```\n") {
		t.Fatal("docs/rules.md does not show examples/gateway/rules.yaml verbatim in a yaml code block")
	}
}
