package sluicegrpc_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/rules"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// planInterceptor is the application's interceptor in front of the
// limiter: it sets the call's limit (here from metadata, for the test)
// with sluice.WithLimit on the call's context.
func planInterceptor(ctx context.Context, req any, _ *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	if v := md.Get("x-plan-limit"); len(v) == 1 {
		n, _ := strconv.ParseInt(v[0], 10, 64)
		ctx = sluice.WithLimit(ctx, "per-tenant", sluice.PerMinute(n))
	}
	return next(ctx, req)
}

// Behind the interceptors, overrides apply to calls as to requests, and a
// limit set on the call's context by an interceptor before the limiter
// applies, capped by max_limit.
func TestOverridesAndRequestLimits(t *testing.T) {
	store, _ := fakeStore(t)
	set := rules.MustNew(rules.Rule{
		Name: "per-tenant", Key: keyfunc.Header("X-Tenant"), Limit: sluice.PerMinute(2), MaxLimit: sluice.PerMinute(3),
		Overrides: []rules.Override{{Identities: []string{"acme"}, Limit: sluice.PerMinute(4)}},
	})
	srv := serve(t, newLimiter(t, store, set), []grpc.UnaryServerInterceptor{planInterceptor})
	c := srv.client("203.0.113.7:5000")
	for _, tc := range []struct {
		md       []string
		admitted int
	}{
		{[]string{"x-tenant", "initech"}, 2},
		{[]string{"x-tenant", "acme"}, 4},
		{[]string{"x-tenant", "umbrella", "x-plan-limit", "100"}, 3},
		{[]string{"x-tenant", "hooli", "x-plan-limit", "1"}, 1},
	} {
		for i := range tc.admitted + 1 {
			r := check(t, c, tc.md...)
			want := codes.OK
			if i == tc.admitted {
				want = codes.ResourceExhausted
			}
			if code := status.Code(r.err); code != want {
				t.Fatalf("%v: call %d: %v, want %v", tc.md, i+1, r.err, want)
			}
			if p, want := r.header.Get("ratelimit-policy"), `"per-tenant";q=`+strconv.Itoa(tc.admitted)+`;w=60`; len(p) != 1 || p[0] != want {
				t.Fatalf("%v: ratelimit-policy %q, want %q", tc.md, p, want)
			}
		}
	}
}
