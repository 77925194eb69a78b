package sluicegrpc_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	sluicegrpc "github.com/sluicehq/sluice/grpc"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/rules"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// TestKnownMethods: behind grpc.UnknownServiceHandler, the methods a
// client invents share the Unmatched endpoint when the limiter knows the
// served methods, and each mints a bucket when it does not.
func TestKnownMethods(t *testing.T) {
	served := func(m string) bool { return strings.HasPrefix(m, "/grpc.health.v1.Health/") }
	tests := []struct {
		name string
		opts []sluicegrpc.Option
		want []codes.Code // /x.Y/A, /x.Y/B, Check
	}{
		{"known methods", []sluicegrpc.Option{sluicegrpc.WithKnownMethods(served)},
			[]codes.Code{codes.OK, codes.ResourceExhausted, codes.OK}},
		{"any method", nil, []codes.Code{codes.OK, codes.OK, codes.OK}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store, _ := fakeStore(t)
			set := rules.MustNew(rules.Rule{Name: "per-method", Key: keyfunc.Endpoint(), Limit: sluice.PerMinute(1)})
			srv := serve(t, newLimiter(t, store, set, tt.opts...), nil, grpc.UnknownServiceHandler(proxy))
			cc := srv.conn("203.0.113.7:1")
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			for i, method := range []string{"/x.Y/A", "/x.Y/B", "/grpc.health.v1.Health/Check"} {
				err := cc.Invoke(ctx, method, &healthpb.HealthCheckRequest{}, &healthpb.HealthCheckResponse{})
				if got := status.Code(err); got != tt.want[i] {
					t.Errorf("%s: %v, want %v", method, err, tt.want[i])
				}
			}
		})
	}
}

// proxy stands in for a proxy's unknown-service handler: it answers any
// call with an empty message.
func proxy(_ any, s grpc.ServerStream) error {
	if err := s.RecvMsg(&healthpb.HealthCheckRequest{}); err != nil {
		return err
	}
	return s.SendMsg(&healthpb.HealthCheckResponse{})
}
