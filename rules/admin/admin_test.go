package admin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/sluicehq/sluice/decide"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/middleware"
	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/rules/admin"
	"github.com/sluicehq/sluice/store/memstore"
	"github.com/sluicehq/sluice/store/storetest"
)

// countingStore counts the calls that reach a store.
type countingStore struct {
	sluice.Resetter
	takes, resets atomic.Int64
}

func (s *countingStore) Take(ctx context.Context, hits []sluice.Hit, out []sluice.Result) error {
	s.takes.Add(1)
	return s.Resetter.Take(ctx, hits, out)
}

func (s *countingStore) Reset(ctx context.Context, hits []sluice.Hit) error {
	s.resets.Add(1)
	return s.Resetter.Reset(ctx, hits)
}

// resetCounter is an observer that counts resets by rule.
type resetCounter struct {
	mu     sync.Mutex
	counts map[string]int
}

func (*resetCounter) Observe(context.Context, sluice.Decision) {}

func (c *resetCounter) ObserveReset(_ context.Context, rule string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts[rule]++
}

// syncBuffer is a log sink safe for the server's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

var testRules = rules.MustNew(
	rules.Rule{Name: "per-ip", Key: keyfunc.ClientIP(), Limit: sluice.PerMinute(3)},
	rules.Rule{Name: "per-ip-hourly", Key: keyfunc.ClientIP(), Limit: sluice.PerHour(100), Algorithm: sluice.SlidingLog},
	rules.Rule{Name: "per-key", Key: keyfunc.APIKey("X-API-Key"), Limit: sluice.PerMinute(10), Match: func(r *http.Request) bool { return r.Header.Get("X-API-Key") != "" }},
	rules.Rule{Name: "global", Key: keyfunc.Global(), Limit: sluice.PerSecond(1000)},
)

// fixture is an API limited by testRules and the admin handler over the
// same store, each on a real HTTP server.
type fixture struct {
	api, admin *httptest.Server
	store      *countingStore
	resets     *resetCounter
	log        *syncBuffer
}

func newFixture(t *testing.T, store sluice.Resetter) *fixture {
	t.Helper()
	f := &fixture{store: &countingStore{Resetter: store}, resets: &resetCounter{counts: map[string]int{}}, log: &syncBuffer{}}
	limit := middleware.Limit(f.store, testRules, decide.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	f.api = httptest.NewServer(limit(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {})))
	t.Cleanup(f.api.Close)
	h, err := admin.New(f.store, testRules,
		admin.WithObserver(f.resets),
		admin.WithLogger(slog.New(slog.NewJSONHandler(f.log, nil))),
		admin.WithHashSecret([]byte("test")))
	if err != nil {
		t.Fatal(err)
	}
	f.admin = httptest.NewServer(h)
	t.Cleanup(f.admin.Close)
	return f
}

func newMemFixture(t *testing.T) *fixture {
	clock := storetest.NewClock(time.Unix(1_700_000_000, 0))
	mem := memstore.New(memstore.Config{Clock: clock, SweepInterval: -1})
	t.Cleanup(func() { mem.Close(context.Background()) })
	return newFixture(t, mem)
}

// get sends n requests to the API and returns the last status.
func (f *fixture) get(t *testing.T, n int, apiKey string) int {
	t.Helper()
	status := 0
	for range n {
		req, _ := http.NewRequest("GET", f.api.URL, nil)
		if apiKey != "" {
			req.Header.Set("X-API-Key", apiKey)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		status = resp.StatusCode
	}
	return status
}

type bucketsBody struct {
	Buckets []admin.Bucket `json:"buckets"`
}

type problemBody struct {
	Type, Title, Detail string
	Status              int
}

// post sends body to the admin handler's path and decodes the answer.
func (f *fixture) post(t *testing.T, path, body string) (status int, contentType string, raw []byte) {
	t.Helper()
	resp, err := http.Post(f.admin.URL+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ = io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Content-Type"), raw
}

func (f *fixture) buckets(t *testing.T, path, body string) []admin.Bucket {
	t.Helper()
	status, ct, raw := f.post(t, path, body)
	if status != http.StatusOK || ct != "application/json" {
		t.Fatalf("POST %s %s: %d %s %s", path, body, status, ct, raw)
	}
	var b bucketsBody
	if err := json.Unmarshal(raw, &b); err != nil {
		t.Fatal(err)
	}
	return b.Buckets
}

// testResetRestoresTheLimit exhausts a client's per-ip bucket through the
// limited API, inspects it, resets it through the admin handler, and
// checks the client passes again, with the reset logged and counted.
func testResetRestoresTheLimit(t *testing.T, f *fixture) {
	if got := f.get(t, 4, ""); got != http.StatusTooManyRequests {
		t.Fatalf("4th request at 3/min: %d, want 429", got)
	}
	b := f.buckets(t, "/inspect", `{"rule":"per-ip","identity":"127.0.0.1"}`)
	if len(b) != 1 || b[0].Allowed || b[0].Remaining != 0 || b[0].RetryAfterMS <= 0 || b[0].RetryAfterMS > 20_000 || b[0].Identity != "127.0.0.1" || b[0].Limit != "3/1m" {
		t.Fatalf("inspect of an exhausted client: %+v", b)
	}
	// The IPv4-mapped form is the same client; a peek consumed nothing.
	again := f.buckets(t, "/inspect", `{"rule":"per-ip","identity":" ::ffff:127.0.0.1 "}`)
	if len(again) != 1 || again[0].Remaining != 0 || again[0].Identity != "127.0.0.1" {
		t.Fatalf("inspect by the IPv4-mapped address: %+v", again)
	}
	after := f.buckets(t, "/reset", `{"rule":"per-ip","identity":"127.0.0.1"}`)
	if len(after) != 1 || !after[0].Allowed || after[0].Remaining != 3 || after[0].RetryAfterMS != 0 {
		t.Fatalf("state after the reset: %+v, want the full limit", after)
	}
	if got := f.get(t, 3, ""); got != http.StatusOK {
		t.Fatalf("3 requests after the reset: last got %d, want 200", got)
	}
	if got := f.get(t, 1, ""); got != http.StatusTooManyRequests {
		t.Fatalf("a 4th request after the reset: %d, want 429", got)
	}
	log := f.log.String()
	if !strings.Contains(log, `"rule":"per-ip"`) || !strings.Contains(log, `"identity_hash":"`) || strings.Contains(log, `"identity":`) {
		t.Fatalf("reset log: %s", log)
	}
	f.resets.mu.Lock()
	defer f.resets.mu.Unlock()
	if f.resets.counts["per-ip"] != 1 || len(f.resets.counts) != 1 {
		t.Fatalf("resets counted: %v, want per-ip once", f.resets.counts)
	}
}

func TestResetRestoresTheLimit(t *testing.T) { testResetRestoresTheLimit(t, newMemFixture(t)) }

func TestKindSelectsEveryRuleOfTheKind(t *testing.T) {
	f := newMemFixture(t)
	f.get(t, 2, "")
	b := f.buckets(t, "/inspect", `{"kind":"ip","identity":"127.0.0.1"}`)
	if len(b) != 2 || b[0].Rule != "per-ip" || b[0].Remaining != 1 || b[1].Rule != "per-ip-hourly" || b[1].Remaining != 98 || b[1].Algorithm != "sliding_log" {
		t.Fatalf("inspect by kind: %+v", b)
	}
	f.buckets(t, "/reset", `{"kind":"ip","identity":"127.0.0.1"}`)
	b = f.buckets(t, "/inspect", `{"kind":"ip","identity":"127.0.0.1"}`)
	if b[0].Remaining != 3 || b[1].Remaining != 100 {
		t.Fatalf("after resetting every ip rule: %+v", b)
	}
	if g := f.buckets(t, "/inspect", `{"rule":"global"}`); len(g) != 1 || g[0].Remaining != 1000-2 {
		t.Fatalf("the global bucket: %+v", g)
	}
	if k := f.buckets(t, "/inspect", `{"rule":"per-key","identity":"sk_test_1"}`); len(k) != 1 || k[0].Remaining != 10 {
		t.Fatalf("an api key never seen: %+v", k)
	}
	f.get(t, 1, "sk_test_1")
	if k := f.buckets(t, "/inspect", `{"rule":"per-key","identity":"sk_test_1"}`); k[0].Remaining != 9 {
		t.Fatalf("an api key used once: %+v", k)
	}
}

func TestBadInputIsRefusedBeforeTheStore(t *testing.T) {
	f := newMemFixture(t)
	f.get(t, 3, "")
	takes, resets := f.store.takes.Load(), f.store.resets.Load()
	for _, tc := range []struct {
		path, body string
		status     int
		detail     string
	}{
		{"/reset", `{"rule":"per-ip","identity":"300.1.2.3"}`, 400, "malformed identity"},
		{"/reset", `{"rule":"per-ip","identity":"127.0.0.1/8"}`, 400, "malformed identity"},
		{"/reset", `{"rule":"per-ip","identity":""}`, 400, "malformed identity"},
		{"/reset", `{"rule":"per-key","identity":"bad\u0000key"}`, 400, "malformed identity"},
		{"/reset", `{"kind":"ip","identity":"localhost"}`, 400, "malformed identity"},
		{"/reset", `{"rule":"global","identity":"someone"}`, 400, "malformed identity"},
		{"/reset", `{"rule":"per-ip","identity":"` + strings.Repeat("1", 2000) + `"}`, 400, "malformed identity"},
		{"/reset", `{"rule":"per-ip"`, 400, "not a JSON object"},
		{"/reset", `{"rule":"per-ip","identity":"127.0.0.1","extra":1}`, 400, "not a JSON object"},
		{"/reset", `{"rule":"per-ip","identity":"127.0.0.1"} {}`, 400, "more than one"},
		{"/reset", `{"rule":"per-ip","kind":"ip","identity":"127.0.0.1"}`, 400, "not both"},
		{"/reset", `{"identity":"127.0.0.1"}`, 400, "not both"},
		{"/reset", `{"rule":"no-such-rule","identity":"127.0.0.1"}`, 404, "no rule named"},
		{"/inspect", `{"rule":"no-such-rule","identity":"127.0.0.1"}`, 404, "no rule named"},
		{"/reset", `{"kind":"user","identity":"alice"}`, 404, "no rule keys on"},
		{"/nowhere", `{}`, 404, "routes"},
		{"/rules", `{}`, 405, "takes GET"},
	} {
		t.Run(tc.path+" "+tc.body[:min(len(tc.body), 40)], func(t *testing.T) {
			status, ct, raw := f.post(t, tc.path, tc.body)
			var p problemBody
			if err := json.Unmarshal(raw, &p); err != nil {
				t.Fatalf("%s: %v", raw, err)
			}
			if status != tc.status || ct != "application/problem+json" || p.Status != tc.status || p.Title == "" || !strings.Contains(p.Detail, tc.detail) {
				t.Fatalf("got %d %s %+v, want %d with %q", status, ct, p, tc.status, tc.detail)
			}
			var q struct{ Identity string }
			if json.Unmarshal([]byte(tc.body), &q) == nil && len(q.Identity) > 3 && strings.Contains(string(raw), q.Identity) {
				t.Fatalf("the problem echoes the identity: %s", raw)
			}
		})
	}
	if f.store.takes.Load() != takes || f.store.resets.Load() != resets {
		t.Fatalf("bad input reached the store: %d takes, %d resets", f.store.takes.Load()-takes, f.store.resets.Load()-resets)
	}
	if got := f.get(t, 1, ""); got != http.StatusTooManyRequests {
		t.Fatalf("after refused resets the client is still limited: got %d, want 429", got)
	}
}

// unsupportedResets is a Resetter wrapping a store that cannot reset, as
// a store decorator may be.
type unsupportedResets struct{ sluice.Store }

func (unsupportedResets) Reset(context.Context, []sluice.Hit) error {
	return fmt.Errorf("wrapper: the store beneath cannot reset: %w", errors.ErrUnsupported)
}

// TestResetNeedsAResetter: a store that is not a Resetter, and one whose
// Reset reports errors.ErrUnsupported, are both answered 501, naming the
// unsupported operation; inspecting works on both.
func TestResetNeedsAResetter(t *testing.T) {
	mem := memstore.New(memstore.Config{SweepInterval: -1})
	defer mem.Close(context.Background())
	for name, store := range map[string]sluice.Store{
		"not a Resetter":       struct{ sluice.Store }{mem},
		"Reset ErrUnsupported": unsupportedResets{mem},
	} {
		t.Run(name, func(t *testing.T) {
			h, err := admin.New(store, testRules)
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(h)
			defer srv.Close()
			for path, want := range map[string]int{"/inspect": 200, "/reset": 501} {
				resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader(`{"rule":"per-ip","identity":"192.0.2.1"}`))
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != want {
					t.Fatalf("%s: %d %s, want %d", path, resp.StatusCode, body, want)
				}
				if want == 501 && (resp.Header.Get("Content-Type") != "application/problem+json" || !strings.Contains(string(body), errors.ErrUnsupported.Error())) {
					t.Fatalf("%s: %s %s, want a problem naming %q", path, resp.Header.Get("Content-Type"), body, errors.ErrUnsupported)
				}
			}
		})
	}
}

func TestListRules(t *testing.T) {
	f := newMemFixture(t)
	resp, err := http.Get(f.admin.URL + "/rules")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct{ Rules []admin.RuleInfo }
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if len(body.Rules) != 4 || body.Rules[0] != (admin.RuleInfo{Name: "per-ip", Kind: "ip", Limit: "3/1m", Algorithm: "token_bucket", Cost: 1}) {
		t.Fatalf("rules: %+v", body.Rules)
	}
}

func TestNewRefusesBadConfiguration(t *testing.T) {
	mem := memstore.New(memstore.Config{SweepInterval: -1})
	defer mem.Close(context.Background())
	for name, tc := range map[string]struct {
		store sluice.Store
		src   rules.Source
		opt   admin.Option
	}{
		"nil store":      {nil, testRules, nil},
		"nil source":     {mem, nil, nil},
		"ipv6 prefix 8":  {mem, testRules, admin.WithIPv6Prefix(8)},
		"nil logger":     {mem, testRules, admin.WithLogger(nil)},
		"empty secret":   {mem, testRules, admin.WithHashSecret(nil)},
		"nil parser":     {mem, testRules, admin.WithIdentity("user", nil)},
		"empty kind":     {mem, testRules, admin.WithIdentity("", func(s string) (string, error) { return s, nil })},
		"nil set":        {mem, (*rules.Set)(nil), nil},
		"nil more rules": {mem, testRules, admin.WithRules(testRules, nil)},
		"nil more set":   {mem, testRules, admin.WithRules((*rules.Set)(nil))},
	} {
		t.Run(name, func(t *testing.T) {
			var opts []admin.Option
			if tc.opt != nil {
				opts = append(opts, tc.opt)
			}
			if h, err := admin.New(tc.store, tc.src, opts...); h != nil || !errors.Is(err, sluice.ErrInvalidConfig) {
				t.Fatalf("got %v, %v; want an error wrapping ErrInvalidConfig", h, err)
			}
		})
	}
}

func TestMustNew(t *testing.T) {
	mem := memstore.New(memstore.Config{SweepInterval: -1})
	defer mem.Close(context.Background())
	if h := admin.MustNew(mem, testRules); h == nil {
		t.Fatal("MustNew with a valid configuration: nil handler")
	}
	defer func() {
		if err, _ := recover().(error); !errors.Is(err, sluice.ErrInvalidConfig) {
			t.Fatalf("MustNew with a nil store panicked with %v, want an error wrapping ErrInvalidConfig", err)
		}
	}()
	admin.MustNew(nil, testRules)
}

// Inspect reports the limit in force for the identity: an override's
// when one names it; and, for a window algorithm, what the period used.
func TestInspectReportsTheOverride(t *testing.T) {
	mem := memstore.New(memstore.Config{Clock: storetest.NewClock(time.Unix(1_700_000_000, 0)), SweepInterval: -1})
	t.Cleanup(func() { mem.Close(context.Background()) })
	set := rules.MustNew(rules.Rule{
		Name: "per-tenant", Key: keyfunc.Header("X-Tenant"), Limit: sluice.PerMinute(600),
		Overrides: []rules.Override{{Identities: []string{"acme"}, Limit: sluice.PerMinute(6000)}},
	}, rules.Rule{
		Name: "per-tenant-hourly", Key: keyfunc.Header("X-Tenant"), Limit: sluice.PerHour(1000), Algorithm: sluice.FixedWindow,
		Overrides: []rules.Override{{Identities: []string{"acme"}, Limit: sluice.PerHour(5000)}},
	})
	takeAs(t, mem, set, "acme", 3)
	srv := httptest.NewServer(admin.MustNew(mem, set))
	t.Cleanup(srv.Close)
	status, body := post(t, srv, "/inspect", `{"rule": "per-tenant-hourly", "identity": "acme"}`)
	var hourly bucketsBody
	if err := json.Unmarshal([]byte(body), &hourly); status != http.StatusOK || err != nil || len(hourly.Buckets) != 1 {
		t.Fatalf("hourly: %d %s", status, body)
	}
	if b := hourly.Buckets[0]; b.Limit != "5000/1h" || b.Used == nil || *b.Used != 3 || b.Remaining != 4997 {
		t.Errorf("hourly: %s, want limit 5000/1h, used 3, remaining 4997", body)
	}
	for tenant, want := range map[string]string{"acme": "6000/1m", "initech": "600/1m"} {
		status, body := post(t, srv, "/inspect", `{"rule": "per-tenant", "identity": "`+tenant+`"}`)
		var b bucketsBody
		if err := json.Unmarshal([]byte(body), &b); status != http.StatusOK || err != nil || len(b.Buckets) != 1 {
			t.Fatalf("%s: %d %s", tenant, status, body)
		}
		if got := b.Buckets[0]; got.Limit != want || got.Used != nil || got.Remaining != map[string]int64{"acme": 5997, "initech": 600}[tenant] {
			t.Errorf("%s: %+v, want limit %s", tenant, got, want)
		}
	}
}
