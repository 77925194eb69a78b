package sluicegrpc_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/decide"
	sluicegrpc "github.com/sluicehq/sluice/grpc"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/store/lease"
	"github.com/sluicehq/sluice/store/memstore"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
)

// countingCodec is the proto codec, counting the messages the server
// decodes.
type countingCodec struct {
	encoding.CodecV2
	decoded atomic.Int64
}

func (c *countingCodec) Unmarshal(data mem.BufferSlice, v any) error {
	c.decoded.Add(1)
	return c.CodecV2.Unmarshal(data, v)
}

// tapServer serves healthService limited by l through its tap handle and
// its interceptors, counting the messages it decodes.
func tapServer(t *testing.T, l *sluicegrpc.Limiter) (*server, *countingCodec) {
	t.Helper()
	h, err := l.TapHandle()
	if err != nil {
		t.Fatal(err)
	}
	codec := &countingCodec{CodecV2: encoding.GetCodecV2("proto")}
	return serve(t, l, nil, grpc.InTapHandle(h), grpc.ForceServerCodecV2(codec)), codec
}

// TestTapHandle: with the tap handle, a call over the limit is refused
// before its message is decoded, with ResourceExhausted and its RetryInfo
// but no metadata; an admitted call is decided once (by the tap) and its
// interceptor sends the rate-limit fields; a stream's open is decided by
// the tap too; keys by peer address and by metadata work.
func TestTapHandle(t *testing.T) {
	store, clk := fakeStore(t)
	set := rules.MustNew(
		rules.Rule{Name: "ip", Key: keyfunc.ClientIP(), Limit: sluice.PerMinute(2)},
		rules.Rule{Name: "tenant", Key: keyfunc.Header("x-tenant"), Limit: sluice.PerMinute(3)},
	)
	var seen decisions
	srv, codec := tapServer(t, newLimiter(t, store, set, decide.WithClock(clk), decide.WithObserver(&seen)))
	a, b := srv.client("203.0.113.7:1"), srv.client("203.0.113.8:1")
	steps := []struct {
		c      healthpb.HealthClient
		tenant string
		want   codes.Code
		rule   string // the refusing rule
		retry  time.Duration
	}{
		{a, "t1", codes.OK, "", 0},
		{a, "t1", codes.OK, "", 0},
		{a, "t1", codes.ResourceExhausted, "ip", 30 * time.Second}, // 2 a minute: one back in 30 s
		{b, "t1", codes.OK, "", 0},
		{b, "t1", codes.ResourceExhausted, "tenant", 20 * time.Second}, // 3 a minute
		{b, "t2", codes.OK, "", 0},
	}
	var admitted int64
	for i, s := range steps {
		r := check(t, s.c, "x-tenant", s.tenant)
		if got := status.Code(r.err); got != s.want {
			t.Fatalf("call %d: %v, want %v", i, r.err, s.want)
		}
		if s.want == codes.OK {
			admitted++
			if got := r.header.Get("ratelimit-policy"); len(got) != 1 {
				t.Errorf("call %d: ratelimit-policy %q, want the tap's fields", i, got)
			}
			continue
		}
		if d, ok := sluicegrpc.RetryDelay(r.err); !ok || d != s.retry {
			t.Errorf("call %d: RetryDelay = %v, %v; want %v", i, d, ok, s.retry)
		}
		if vs := sluicegrpc.Violations(r.err); len(vs) != 1 || vs[0].QuotaId != s.rule {
			t.Errorf("call %d: violations %v, want %s", i, vs, s.rule)
		}
		if len(r.header) != 0 || r.trailer.Get("grpc-retry-pushback-ms") != nil {
			t.Errorf("call %d: a tap's refusal carries metadata: header %v, trailer %v", i, r.header, r.trailer)
		}
	}
	if got := codec.decoded.Load(); got != admitted {
		t.Errorf("the server decoded %d messages, want %d (the admitted calls')", got, admitted)
	}
	want := "ip:allowed tenant:allowed ip:allowed tenant:allowed ip:denied tenant:allowed " +
		"ip:allowed tenant:allowed ip:allowed tenant:denied ip:allowed tenant:allowed"
	if got := seen.outcomes(); got != want {
		t.Errorf("decisions (each call decided once):\n got %s\nwant %s", got, want)
	}
	// A stream's open: a's address is spent.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	w, err := a.Watch(ctx, &healthpb.HealthCheckRequest{})
	if err == nil {
		_, err = w.Recv()
	}
	if status.Code(err) != codes.ResourceExhausted {
		t.Errorf("stream open: %v, want ResourceExhausted", err)
	}
}

// TestTapLeftToInterceptors: calls the tap cannot key (a required API key
// missing) are answered by the interceptors, after decoding, as without a
// tap.
func TestTapLeftToInterceptors(t *testing.T) {
	store, clk := fakeStore(t)
	set := rules.MustNew(rules.Rule{Name: "key", Key: keyfunc.APIKey("x-api-key").Required(), Limit: sluice.PerMinute(1)})
	srv, codec := tapServer(t, newLimiter(t, store, set, decide.WithClock(clk)))
	c := srv.client("203.0.113.7:1")
	if r := check(t, c); status.Code(r.err) != codes.InvalidArgument {
		t.Fatalf("no API key: %v, want InvalidArgument", r.err)
	}
	if got := codec.decoded.Load(); got != 1 {
		t.Errorf("decoded %d messages, want 1: the interceptor answered", got)
	}
	if r := check(t, c, "x-api-key", "k1"); r.err != nil {
		t.Fatal(r.err)
	}
	if r := check(t, c, "x-api-key", "k1"); status.Code(r.err) != codes.ResourceExhausted {
		t.Fatalf("second call: %v, want ResourceExhausted", r.err)
	}
	if got := codec.decoded.Load(); got != 2 {
		t.Errorf("decoded %d messages, want 2", got)
	}
}

// remote is a memstore that hides being in process, as a store behind a
// network does, counting its calls.
type remote struct {
	s     *memstore.Store
	calls atomic.Int64
}

func (r *remote) Take(ctx context.Context, hits []sluice.Hit, out []sluice.Result) error {
	r.calls.Add(1)
	return r.s.Take(ctx, hits, out)
}

func (r *remote) Refund(ctx context.Context, refunds []sluice.Refund) error {
	return r.s.Refund(ctx, refunds)
}

// TestTapLease: over a lease store, the tap decides the calls its local
// tokens and remembered refusals can, leaves the others to the
// interceptors (whose store calls refill the leases), and admits exactly
// the limit.
func TestTapLease(t *testing.T) {
	mem, clk := fakeStore(t)
	backing := &remote{s: mem}
	ls, err := lease.New(backing, lease.Config{Clock: clk, SweepInterval: -1, Instances: 1,
		Default: &sluice.LeasePolicy{Enabled: true, TTL: time.Minute}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ls.Close(context.Background()) })
	set := rules.MustNew(rules.Rule{Name: "ip", Key: keyfunc.ClientIP(), Limit: sluice.PerMinute(20)})
	srv, codec := tapServer(t, newLimiter(t, ls, set, decide.WithClock(clk)))
	c := srv.client("203.0.113.7:1")
	const calls = 40
	var admitted int64
	for i := range calls {
		r := check(t, c)
		switch status.Code(r.err) {
		case codes.OK:
			admitted++
		case codes.ResourceExhausted:
		default:
			t.Fatalf("call %d: %v", i, r.err)
		}
	}
	if admitted != 20 {
		t.Errorf("admitted %d of %d, want the limit, 20", admitted, calls)
	}
	t.Logf("%d calls: %d admitted, %d store calls, %d decoded", calls, admitted, backing.calls.Load(), codec.decoded.Load())
	if n := backing.calls.Load(); n >= admitted {
		t.Errorf("%d store calls for %d admitted calls: the tap decided none from leases", n, admitted)
	}
	// Every call the interceptors decided was decoded; the tap's refusals
	// were not.
	if got := codec.decoded.Load(); got >= calls {
		t.Errorf("decoded %d of %d calls: the tap refused none before decoding", got, calls)
	}
}

// TestTapHandleErrors: a store that cannot decide in process, and a rule
// keyed by what the tap cannot see, are refused when the handle is made.
func TestTapHandleErrors(t *testing.T) {
	store, _ := fakeStore(t)
	ip := rules.Rule{Name: "ip", Key: keyfunc.ClientIP(), Limit: sluice.PerMinute(1)}
	user := rules.Rule{Name: "user", Key: keyfunc.User(func(context.Context) (string, bool) { return "", false }), Limit: sluice.PerMinute(1)}
	userEndpoint := rules.Rule{Name: "ue", Key: keyfunc.Join(user.Key, keyfunc.Endpoint()), Limit: sluice.PerMinute(1)}
	tenant := rules.Rule{Name: "tenant", Key: keyfunc.New("tenant", func(*http.Request) (string, error) { return "t", nil }), Limit: sluice.PerMinute(1)}
	good := rules.Rule{Name: "good", Key: keyfunc.Join(keyfunc.APIKey("x-api-key"), keyfunc.Endpoint()), Limit: sluice.PerMinute(1)}
	// A header's name may hold "_", as api_key's kind does: the parts
	// decide, never the joined kind split at "_".
	underscore := rules.Rule{Name: "underscore", Key: keyfunc.Join(keyfunc.Header("X_Tenant_Id"), keyfunc.ClientIP()), Limit: sluice.PerMinute(1)}
	// A kind of your own whose name is a part of a built-in kind's.
	key := rules.Rule{Name: "key", Key: keyfunc.New("key", func(*http.Request) (string, error) { return "k", nil }), Limit: sluice.PerMinute(1)}
	tests := []struct {
		name  string
		store sluice.Store
		set   *rules.Set
		want  error
	}{
		{"memstore", store, rules.MustNew(ip, good, rules.Rule{Name: "g", Key: keyfunc.Global(), Limit: sluice.PerMinute(1)}), nil},
		{"a store behind a network", failingStore{errors.New("down")}, rules.MustNew(ip), sluicegrpc.ErrNotInProcess},
		{"user", store, rules.MustNew(ip, user), sluicegrpc.ErrTapKey},
		{"user_endpoint", store, rules.MustNew(userEndpoint), sluicegrpc.ErrTapKey},
		{"a kind of your own", store, rules.MustNew(tenant), sluicegrpc.ErrTapKey},
		{"a header with _ in its name", store, rules.MustNew(underscore), nil},
		{"a kind of your own named like a part of api_key", store, rules.MustNew(key), sluicegrpc.ErrTapKey},
		{"user joined after api_key", store, rules.MustNew(rules.Rule{Name: "ku", Key: keyfunc.Join(keyfunc.APIKey("x-api-key"), user.Key), Limit: sluice.PerMinute(1)}), sluicegrpc.ErrTapKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLimiter(t, tt.store, tt.set)
			h, err := l.TapHandle()
			if tt.want == nil {
				if err != nil || h == nil {
					t.Fatalf("TapHandle: %v", err)
				}
				return
			}
			if !errors.Is(err, tt.want) || !errors.Is(err, sluice.ErrInvalidConfig) || h != nil {
				t.Fatalf("TapHandle: %v, want %v and ErrInvalidConfig", err, tt.want)
			}
		})
	}
}

// swappable is a rules.Source whose set a test replaces, as a reload does.
type swappable struct{ set atomic.Pointer[rules.Set] }

func (s *swappable) Current() *rules.Set { return s.set.Load() }

// TestTapReloadedUnfit: when a reload brings a rule keyed by user, the tap
// leaves every call to the interceptors, which see the user an
// authenticating interceptor put in the context; when a later reload takes
// it away, the tap decides again.
func TestTapReloadedUnfit(t *testing.T) {
	store, clk := fakeStore(t)
	ip := rules.Rule{Name: "ip", Key: keyfunc.ClientIP(), Limit: sluice.PerMinute(100)}
	user := rules.Rule{Name: "user", Key: keyfunc.User(func(ctx context.Context) (string, bool) { u, ok := ctx.Value(userKey{}).(string); return u, ok }), Limit: sluice.PerMinute(1)}
	var src swappable
	src.set.Store(rules.MustNew(ip))
	l := newLimiter(t, store, &src, decide.WithClock(clk))
	h, err := l.TapHandle()
	if err != nil {
		t.Fatal(err)
	}
	codec := &countingCodec{CodecV2: encoding.GetCodecV2("proto")}
	srv := serve(t, l, []grpc.UnaryServerInterceptor{authenticate}, grpc.InTapHandle(h), grpc.ForceServerCodecV2(codec))
	c := srv.client("203.0.113.7:1")
	if r := check(t, c, "authorization", "ann"); r.err != nil {
		t.Fatal(r.err)
	}
	src.set.Store(rules.MustNew(ip, user))
	if r := check(t, c, "authorization", "ann"); r.err != nil {
		t.Fatal(r.err)
	}
	if r := check(t, c, "authorization", "ann"); status.Code(r.err) != codes.ResourceExhausted {
		t.Fatalf("ann's second call under the user rule: %v, want ResourceExhausted", r.err)
	}
	if got := codec.decoded.Load(); got != 3 {
		t.Errorf("decoded %d, want 3: the interceptor decided the user rule's calls", got)
	}
	// Without the user rule, the tap refuses before decoding again.
	src.set.Store(rules.MustNew(rules.Rule{Name: "ip-2", Key: keyfunc.ClientIP(), Limit: sluice.PerMinute(1)}))
	if r := check(t, c, "authorization", "ann"); r.err != nil {
		t.Fatal(r.err)
	}
	if r := check(t, c, "authorization", "ann"); status.Code(r.err) != codes.ResourceExhausted {
		t.Fatalf("fifth call: %v, want ResourceExhausted", r.err)
	}
	if got := codec.decoded.Load(); got != 4 {
		t.Errorf("decoded %d, want 4: the tap refused the fifth call", got)
	}
}
