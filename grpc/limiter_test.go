package sluicegrpc_test

import (
	"context"
	"errors"
	"github.com/sluicehq/sluice/decide"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	sluicegrpc "github.com/sluicehq/sluice/grpc"
	"github.com/sluicehq/sluice/headers"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/rules"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// TestRefusal: an admitted call carries the rate-limit fields as header
// metadata; a refused one ends with ResourceExhausted, a RetryInfo of the
// exact delay, a QuotaFailure naming the rule, retry-after and the
// pushback trailer.
func TestRefusal(t *testing.T) {
	store, clk := fakeStore(t)
	set := rules.MustNew(rules.Rule{Name: "per-ip", Key: keyfunc.ClientIP(), Limit: sluice.PerMinute(2)})
	srv := serve(t, newLimiter(t, store, set, decide.WithClock(clk)), nil)
	c := srv.client("203.0.113.7:5000")

	first := check(t, c)
	if first.err != nil {
		t.Fatalf("first call: %v", first.err)
	}
	wantMD(t, "first call header", first.header, map[string]string{
		"ratelimit-policy": `"per-ip";q=2;w=60`,
		"ratelimit":        `"per-ip";r=1;t=30`,
	})
	if got := first.header.Get("retry-after"); got != nil {
		t.Errorf("admitted call has retry-after %q", got)
	}
	if second := check(t, c); second.err != nil {
		t.Fatalf("second call: %v", second.err)
	}
	third := check(t, c)
	if code := status.Code(third.err); code != codes.ResourceExhausted {
		t.Fatalf("third call: %v, want ResourceExhausted", third.err)
	}
	if d, ok := sluicegrpc.RetryDelay(third.err); !ok || d != 30*time.Second {
		t.Errorf("RetryDelay = %v, %v; want 30s, true", d, ok)
	}
	v := sluicegrpc.Violations(third.err)
	if len(v) != 1 || v[0].GetQuotaId() != "per-ip" || v[0].GetSubject() != "ip" || v[0].GetQuotaValue() != 2 {
		t.Errorf("violations = %v, want one of per-ip, subject ip, value 2", v)
	}
	if msg := status.Convert(third.err).Message(); msg != "sluice: rate limit exceeded: per-ip" {
		t.Errorf("message %q", msg)
	}
	wantMD(t, "refused call header", third.header, map[string]string{
		"retry-after":      "30",
		"ratelimit-policy": `"per-ip";q=2;w=60`,
		"ratelimit":        `"per-ip";r=0;t=30`,
	})
	wantMD(t, "refused call trailer", third.trailer, map[string]string{"grpc-retry-pushback-ms": "30000"})

	clk.Advance(30 * time.Second)
	if r := check(t, c); r.err != nil {
		t.Fatalf("after the delay: %v", r.err)
	}
}

// wantMD checks that md holds each key with exactly the value given.
func wantMD(t *testing.T, what string, md metadata.MD, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got := md.Get(k); len(got) != 1 || got[0] != v {
			t.Errorf("%s: %s = %q, want %q", what, k, got, v)
		}
	}
}

// step is one call of a key test: from a peer, with outgoing metadata,
// of a method, and the code it must end with.
type step struct {
	peer   string
	md     []string
	method string // "check" (default), "list" or "watch"
	want   codes.Code
}

// TestKeys: calls are keyed by the peer address (with keyfunc's trusted
// proxy rules), metadata, the authenticated identity and the method,
// through the keys written for HTTP.
func TestKeys(t *testing.T) {
	proxies, err := keyfunc.ParsePrefixes("10.0.0.0/8")
	if err != nil {
		t.Fatal(err)
	}
	xff, err := keyfunc.XFF(proxies)
	if err != nil {
		t.Fatal(err)
	}
	viaProxy, err := keyfunc.IP(keyfunc.IPConfig{Resolver: xff})
	if err != nil {
		t.Fatal(err)
	}
	users := keyfunc.User(func(ctx context.Context) (string, bool) {
		u, ok := ctx.Value(userKey{}).(string)
		return u, ok
	})
	one := sluice.PerMinute(1)
	const (
		ok = codes.OK
		no = codes.ResourceExhausted
	)
	tests := []struct {
		name  string
		key   keyfunc.Key
		steps []step
	}{
		{"peer address", keyfunc.ClientIP(), []step{
			{peer: "203.0.113.7:1"}, {peer: "203.0.113.7:2", want: no}, {peer: "203.0.113.8:1"},
		}},
		{"IPv6 peers by /64", keyfunc.ClientIP(), []step{
			{peer: "[2001:db8:1:2::1]:1"}, {peer: "[2001:db8:1:2::ffff]:1", want: no}, {peer: "[2001:db8:1:3::1]:1"},
		}},
		{"IPv4-mapped peer is its IPv4 address", keyfunc.ClientIP(), []step{
			{peer: "[::ffff:203.0.113.7]:1"}, {peer: "203.0.113.7:1", want: no},
		}},
		{"forwarded metadata from a trusted proxy", viaProxy, []step{
			{peer: "10.0.0.1:1", md: []string{"x-forwarded-for", "198.51.100.1"}},
			{peer: "10.0.0.2:1", md: []string{"x-forwarded-for", "198.51.100.1"}, want: no},
			{peer: "10.0.0.1:1", md: []string{"x-forwarded-for", "198.51.100.2"}},
		}},
		{"forwarded metadata from an untrusted peer is ignored", viaProxy, []step{
			{peer: "203.0.113.9:1", md: []string{"x-forwarded-for", "198.51.100.1"}},
			{peer: "203.0.113.9:1", md: []string{"x-forwarded-for", "198.51.100.2"}, want: no},
		}},
		{"a trusted proxy without forwarded metadata fails closed", viaProxy, []step{
			{peer: "10.0.0.1:1", want: codes.InvalidArgument},
		}},
		{"API key metadata", keyfunc.APIKey("X-API-Key"), []step{
			{peer: "203.0.113.7:1", md: []string{"x-api-key", "a"}},
			{peer: "203.0.113.8:1", md: []string{"x-api-key", "a"}, want: no},
			{peer: "203.0.113.7:1", md: []string{"x-api-key", "b"}},
			{peer: "203.0.113.7:1"}, // no key: the rule skips the call
		}},
		{"API key sent twice", keyfunc.APIKey("X-API-Key"), []step{
			{peer: "203.0.113.7:1", md: []string{"x-api-key", "a", "x-api-key", "b"}, want: codes.InvalidArgument},
		}},
		{"required API key missing", keyfunc.APIKey("X-API-Key").Required(), []step{
			{peer: "203.0.113.7:1", want: codes.InvalidArgument},
		}},
		{"authenticated user from the context", users, []step{
			{peer: "203.0.113.7:1", md: []string{"authorization", "alice"}},
			{peer: "203.0.113.8:1", md: []string{"authorization", "alice"}, want: no},
			{peer: "203.0.113.7:1", md: []string{"authorization", "bob"}},
		}},
		{"full method name as endpoint", keyfunc.Endpoint(), []step{
			{peer: "203.0.113.7:1"}, {peer: "203.0.113.8:1", want: no},
			{peer: "203.0.113.7:1", method: "list"},
			{peer: "203.0.113.7:1", method: "watch"}, {peer: "203.0.113.7:1", method: "watch", want: no},
		}},
		{"a peer without an IP address has no IP key", keyfunc.ClientIP(), []step{
			{peer: "in-memory", want: codes.InvalidArgument},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store, _ := fakeStore(t)
			set := rules.MustNew(rules.Rule{Name: "r", Key: tt.key, Limit: one})
			srv := serve(t, newLimiter(t, store, set), []grpc.UnaryServerInterceptor{authenticate})
			for i, s := range tt.steps {
				c := srv.client(s.peer)
				if got := status.Code(s.do(t, c)); got != s.want {
					t.Fatalf("step %d (%+v): %v, want %v", i, s, got, s.want)
				}
			}
		})
	}
}

// do makes the step's call and returns its error.
func (s step) do(t *testing.T, c healthpb.HealthClient) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if len(s.md) > 0 {
		ctx = metadata.AppendToOutgoingContext(ctx, s.md...)
	}
	switch s.method {
	case "list":
		_, err := c.List(ctx, &healthpb.HealthListRequest{})
		return err
	case "watch":
		w, err := c.Watch(ctx, &healthpb.HealthCheckRequest{})
		if err != nil {
			return err
		}
		_, err = w.Recv()
		return err
	}
	_, err := c.Check(ctx, &healthpb.HealthCheckRequest{})
	return err
}

type userKey struct{}

// authenticate is a stand-in for an authentication interceptor: the
// authorization metadata, when present, names the user.
func authenticate(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		if v := md.Get("authorization"); len(v) == 1 {
			ctx = context.WithValue(ctx, userKey{}, v[0])
		}
	}
	return handler(ctx, req)
}

// TestStream: a streaming call is decided once, before its handler; a
// refusal reaches the client as the stream's status, with its details and
// header metadata.
func TestStream(t *testing.T) {
	store, clk := fakeStore(t)
	set := rules.MustNew(rules.Rule{Name: "watch", Key: keyfunc.Endpoint(), Limit: sluice.PerMinute(1)})
	srv := serve(t, newLimiter(t, store, set, decide.WithClock(clk)), nil)
	c := srv.client("203.0.113.7:1")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i, want := range []codes.Code{codes.OK, codes.ResourceExhausted} {
		w, err := c.Watch(ctx, &healthpb.HealthCheckRequest{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = w.Recv()
		if got := status.Code(err); got != want {
			t.Fatalf("call %d: %v, want %v", i, err, want)
		}
		md, herr := w.Header()
		if herr != nil {
			t.Fatal(herr)
		}
		if got := md.Get("ratelimit-policy"); len(got) != 1 || got[0] != `"watch";q=1;w=60` {
			t.Errorf("call %d: ratelimit-policy %q", i, got)
		}
		if want == codes.OK {
			continue
		}
		if d, ok := sluicegrpc.RetryDelay(err); !ok || d != time.Minute {
			t.Errorf("RetryDelay = %v, %v; want 1m, true", d, ok)
		}
		if got := md.Get("retry-after"); len(got) != 1 || got[0] != "60" {
			t.Errorf("retry-after %q, want 60", got)
		}
		if got := w.Trailer().Get("grpc-retry-pushback-ms"); len(got) != 1 || got[0] != "60000" {
			t.Errorf("pushback %q, want 60000", got)
		}
	}
}

// TestOnFail: when the store fails, each rule applies its on_fail: local
// decides on the rule's share in process, open lets calls through, closed
// ends them with Unavailable and the store's expected outage as RetryInfo.
func TestOnFail(t *testing.T) {
	limit := sluice.PerMinute(4)
	tests := []struct {
		name      string
		onFail    rules.OnFail
		instances int
		want      []codes.Code
		outcomes  string
		retry     time.Duration // of the last call, when it has one
	}{
		{"open", rules.FailOpen, 1, []codes.Code{codes.OK, codes.OK, codes.OK, codes.OK, codes.OK},
			"r:failed_open r:failed_open r:failed_open r:failed_open r:failed_open", 0},
		{"closed", rules.FailClosed, 1, []codes.Code{codes.Unavailable},
			"r:failed_closed", 5 * time.Second},
		{"local, one instance", rules.FailLocal, 1, []codes.Code{codes.OK, codes.OK, codes.OK, codes.OK, codes.ResourceExhausted},
			"r:local r:local r:local r:local r:local", 15 * time.Second},
		{"local, a share of two instances", rules.FailLocal, 2, []codes.Code{codes.OK, codes.OK, codes.ResourceExhausted},
			"r:local r:local r:local", 30 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obs := &decisions{}
			set := rules.MustNew(rules.Rule{Name: "r", Key: keyfunc.ClientIP(), Limit: limit, OnFail: tt.onFail})
			l := newLimiter(t, failingStore{unavailable(5 * time.Second)}, set,
				decide.WithObserver(obs), decide.WithInstances(tt.instances))
			c := serve(t, l, nil).client("203.0.113.7:1")
			var last call
			for i, want := range tt.want {
				last = check(t, c)
				if got := status.Code(last.err); got != want {
					t.Fatalf("call %d: %v, want %v", i, last.err, want)
				}
			}
			if got := obs.outcomes(); got != tt.outcomes {
				t.Errorf("outcomes %q, want %q", got, tt.outcomes)
			}
			if len(obs.calls) != len(tt.want) || !errors.Is(obs.calls[0].Err, sluice.ErrUnavailable) {
				t.Errorf("store calls observed: %+v", obs.calls)
			}
			if last.err == nil {
				if got := last.header.Get("ratelimit"); got != nil {
					t.Errorf("a rule decided by on_fail appears in the fields: %q", got)
				}
				return
			}
			d, ok := sluicegrpc.RetryDelay(last.err)
			// The local fallback runs on the system clock: its delay is
			// a little under the bucket's interval.
			if !ok || d > tt.retry || d < tt.retry-time.Second {
				t.Errorf("RetryDelay = %v, %v; want about %v", d, ok, tt.retry)
			}
			if status.Code(last.err) == codes.ResourceExhausted {
				// The rule's limit, not the instance's share of it.
				if v := sluicegrpc.Violations(last.err); len(v) != 1 || v[0].GetQuotaId() != "r" || v[0].GetQuotaValue() != 4 {
					t.Errorf("violations %v, want rule r of 4", v)
				}
			}
			if status.Code(last.err) == codes.Unavailable {
				if msg := status.Convert(last.err).Message(); strings.Contains(msg, "test: take") {
					t.Errorf("the store's error reaches the client: %q", msg)
				}
				wantMD(t, "fail-closed header", last.header, map[string]string{"retry-after": "5"})
			}
		})
	}
}

// TestShadowAndHidden: a shadow rule never refuses nor appears in the
// fields; a hidden rule refuses without being named.
func TestShadowAndHidden(t *testing.T) {
	store, _ := fakeStore(t)
	obs := &decisions{}
	set := rules.MustNew(
		rules.Rule{Name: "dry-run", Key: keyfunc.ClientIP(), Limit: sluice.PerMinute(1), Shadow: true},
		rules.Rule{Name: "secret", Key: keyfunc.ClientIP(), Limit: sluice.PerMinute(2), Hidden: true},
		rules.Rule{Name: "public", Key: keyfunc.Endpoint(), Limit: sluice.PerMinute(100)},
	)
	c := serve(t, newLimiter(t, store, set, decide.WithObserver(obs)), nil).client("203.0.113.7:1")
	for i, want := range []codes.Code{codes.OK, codes.OK, codes.ResourceExhausted} {
		r := check(t, c)
		if got := status.Code(r.err); got != want {
			t.Fatalf("call %d: %v, want %v", i, r.err, want)
		}
		if p := strings.Join(r.header.Get("ratelimit-policy"), ","); p != `"public";q=100;w=60` {
			t.Errorf("call %d: ratelimit-policy %q names a rule it must not", i, p)
		}
		if r.err == nil {
			continue
		}
		v := sluicegrpc.Violations(r.err)
		if len(v) != 1 || v[0].GetQuotaId() != "" || strings.Contains(v[0].String(), "secret") {
			t.Errorf("violations %v name the hidden rule", v)
		}
		if msg := status.Convert(r.err).Message(); msg != "sluice: rate limit exceeded" {
			t.Errorf("message %q", msg)
		}
	}
	want := "dry-run:allowed secret:allowed public:allowed " +
		"dry-run:shadow_denied secret:allowed public:allowed " +
		"dry-run:shadow_denied secret:denied public:allowed"
	if got := obs.outcomes(); got != want {
		t.Errorf("outcomes\n%s\nwant\n%s", got, want)
	}
}

// TestUnsatisfiable: a call whose cost exceeds the capacity is refused
// without a retry delay: no RetryInfo, retry-after nor pushback.
func TestUnsatisfiable(t *testing.T) {
	store, _ := fakeStore(t)
	set := rules.MustNew(rules.Rule{Name: "r", Key: keyfunc.ClientIP(), Limit: sluice.PerMinute(2)})
	costly := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		return h(sluice.WithCost(ctx, 5), req)
	}
	r := check(t, serve(t, newLimiter(t, store, set), []grpc.UnaryServerInterceptor{costly}).client("203.0.113.7:1"))
	if status.Code(r.err) != codes.ResourceExhausted {
		t.Fatalf("%v, want ResourceExhausted", r.err)
	}
	if d, ok := sluicegrpc.RetryDelay(r.err); ok {
		t.Errorf("RetryDelay %v for a call that can never pass", d)
	}
	if r.header.Get("retry-after") != nil || r.trailer.Get("grpc-retry-pushback-ms") != nil {
		t.Errorf("retry fields for a call that can never pass: %v %v", r.header, r.trailer)
	}
}

// TestPartialFailure: when the store fails one rule's hit and decides the
// other's, a closed failed rule refuses the call and what the decided hit
// took is given back.
func TestPartialFailure(t *testing.T) {
	store := &partialStore{}
	set := rules.MustNew(
		rules.Rule{Name: "strict", Key: keyfunc.ClientIP(), Limit: sluice.PerMinute(5), OnFail: rules.FailClosed},
		rules.Rule{Name: "loose", Key: keyfunc.Endpoint(), Limit: sluice.PerMinute(5)},
	)
	r := check(t, serve(t, newLimiter(t, store, set), nil).client("203.0.113.7:1"))
	if status.Code(r.err) != codes.Unavailable {
		t.Fatalf("%v, want Unavailable", r.err)
	}
	store.mu.Lock()
	defer store.mu.Unlock()
	if len(store.refunds) != 1 || store.refunds[0].Receipt.Taken != 1 || !strings.Contains(store.refunds[0].Hit.Key, "loose") {
		t.Errorf("refunds %+v, want the loose rule's take", store.refunds)
	}
}

// TestErrorHandlers: the deny and error handlers replace the default
// statuses.
func TestErrorHandlers(t *testing.T) {
	store, _ := fakeStore(t)
	set := rules.MustNew(
		rules.Rule{Name: "r", Key: keyfunc.ClientIP(), Limit: sluice.PerMinute(1)},
	)
	var denial sluicegrpc.Denial
	l := newLimiter(t, store, set,
		sluicegrpc.WithDenyHandler(func(_ context.Context, d sluicegrpc.Denial) error {
			denial = d
			return status.Error(codes.Aborted, "slow down")
		}),
		sluicegrpc.WithErrorHandler(func(_ context.Context, err error, _ time.Duration) error {
			if !errors.Is(err, decide.ErrKeyFailed) || !errors.Is(err, keyfunc.ErrNoKey) {
				return status.Error(codes.Internal, err.Error())
			}
			return status.Error(codes.PermissionDenied, "who are you")
		}),
		decide.WithHeaders(headers.XRateLimit))
	srv := serve(t, l, nil)
	c := srv.client("203.0.113.7:1")
	if r := check(t, c); r.err != nil || r.header.Get("x-ratelimit-limit")[0] != "1" {
		t.Fatalf("first call: %v, header %v", r.err, r.header)
	}
	if r := check(t, c); status.Code(r.err) != codes.Aborted {
		t.Fatalf("second call: %v, want Aborted", r.err)
	}
	want := sluicegrpc.Denial{FullMethod: "/grpc.health.v1.Health/Check", RetryAfter: time.Minute,
		Violations: []sluicegrpc.Violation{{Rule: "r", Kind: "ip", Limit: sluice.PerMinute(1)}}}
	if denial.FullMethod != want.FullMethod || denial.RetryAfter != want.RetryAfter ||
		len(denial.Violations) != 1 || denial.Violations[0] != want.Violations[0] {
		t.Errorf("denial %+v, want %+v", denial, want)
	}
	if r := check(t, srv.client("in-memory")); status.Code(r.err) != codes.PermissionDenied {
		t.Fatalf("unkeyable call: %v, want PermissionDenied", r.err)
	}
}

// TestNew: New refuses nil arguments and invalid options with errors
// wrapping sluice.ErrInvalidConfig.
func TestNew(t *testing.T) {
	store, _ := fakeStore(t)
	set := rules.MustNew(rules.Rule{Name: "r", Key: keyfunc.ClientIP(), Limit: sluice.PerMinute(1)})
	tests := []struct {
		name  string
		store sluice.Store
		set   rules.Source
		opts  []sluicegrpc.Option
		want  string
	}{
		{"nil store", nil, set, nil, "sluicegrpc: New: nil store"},
		{"nil set", store, nil, nil, "sluicegrpc: New: nil rule set"},
		{"nil *rules.Set", store, (*rules.Set)(nil), nil, "sluicegrpc: New: nil rule set"},
		{"nil option", store, set, []sluicegrpc.Option{nil}, "sluicegrpc: nil Option"},
		{"zero budget", store, set, []sluicegrpc.Option{decide.WithBudget(0)}, "sluicegrpc: WithBudget: 0s: must be positive"},
		{"no instances", store, set, []sluicegrpc.Option{decide.WithInstances(0)}, "sluicegrpc: WithInstances: 0: must be at least 1"},
		{"nil observer", store, set, []sluicegrpc.Option{decide.WithObserver(nil)}, "sluicegrpc: WithObserver: nil observer"},
		{"nil logger", store, set, []sluicegrpc.Option{decide.WithLogger(nil)}, "sluicegrpc: WithLogger: nil logger"},
		{"nil clock", store, set, []sluicegrpc.Option{decide.WithClock(nil)}, "sluicegrpc: WithClock: nil clock"},
		{"nil deny handler", store, set, []sluicegrpc.Option{sluicegrpc.WithDenyHandler(nil)}, "sluicegrpc: WithDenyHandler: nil handler"},
		{"nil error handler", store, set, []sluicegrpc.Option{sluicegrpc.WithErrorHandler(nil)}, "sluicegrpc: WithErrorHandler: nil handler"},
		{"nil known methods", store, set, []sluicegrpc.Option{sluicegrpc.WithKnownMethods(nil)}, "sluicegrpc: WithKnownMethods: nil function"},
		{"unknown header mode", store, set, []sluicegrpc.Option{decide.WithHeaders(headers.Mode(1 << 7))}, "sluicegrpc: WithHeaders: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := sluicegrpc.New(tt.store, tt.set, tt.opts...)
			if l != nil || !errors.Is(err, sluice.ErrInvalidConfig) || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("New = %v, %v; want an error %q wrapping ErrInvalidConfig", l, err, tt.want)
			}
		})
	}
}
