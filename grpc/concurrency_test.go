package sluicegrpc_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/decide"
	sluicegrpc "github.com/sluicehq/sluice/grpc"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/rules"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// heldWatch answers Watch with one message, then holds the stream open
// until released.
type heldWatch struct {
	healthService
	release chan struct{}
}

func (h heldWatch) Watch(_ *healthpb.HealthCheckRequest, s grpc.ServerStreamingServer[healthpb.HealthCheckResponse]) error {
	if err := s.Send(&healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}); err != nil {
		return err
	}
	<-h.release
	return nil
}

// A stream holds its concurrency slot for its life: while one Watch
// stream is open, another is refused with ResourceExhausted; once it is
// over, the next one opens. On memstore and on a redis-server.
func TestConcurrencyStreamHoldsItsSlot(t *testing.T) {
	t.Run("memstore", func(t *testing.T) {
		store, clk := fakeStore(t)
		streamHoldsItsSlot(t, store, decide.WithClock(clk))
	})
	t.Run("redis", func(t *testing.T) {
		streamHoldsItsSlot(t, redisStore(t), decide.WithBudget(5*time.Second))
	})
}

func streamHoldsItsSlot(t *testing.T, store sluice.Store, opt sluicegrpc.Option) {
	set := rules.MustNew(rules.Rule{Name: "watchers", Key: keyfunc.Endpoint(), Concurrency: &rules.Concurrency{Max: 1, Hold: time.Minute}})
	l := newLimiter(t, store, set, opt)
	held := heldWatch{release: make(chan struct{})}
	srv := grpc.NewServer(grpc.ChainStreamInterceptor(l.StreamServerInterceptor()))
	healthpb.RegisterHealthServer(srv, held)
	s := &server{tb: t, lis: newAddrListener()}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(s.lis) }()
	t.Cleanup(func() { srv.Stop(); <-done })
	c := s.client("203.0.113.7:1")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	open := func() (healthpb.Health_WatchClient, error) {
		w, err := c.Watch(ctx, &healthpb.HealthCheckRequest{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = w.Recv()
		return w, err
	}
	first, err := open()
	if err != nil {
		t.Fatalf("the first stream: %v", err)
	}
	if _, err := open(); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("a second stream while the first is open: %v, want ResourceExhausted", err)
	}
	close(held.release)
	if _, err := first.Recv(); err != io.EOF {
		t.Fatalf("the first stream's end: %v, want EOF", err)
	}
	if _, err := open(); err != nil {
		t.Fatalf("a stream after the first ended: %v, want it open", err)
	}
}
