package sluicegrpc_test

import (
	"context"
	"github.com/sluicehq/sluice/decide"
	"github.com/sluicehq/sluice/rules"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	sluicegrpc "github.com/sluicehq/sluice/grpc"
	"github.com/sluicehq/sluice/store/memstore"
	"github.com/sluicehq/sluice/store/storetest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/test/bufconn"
)

// epoch is the fake clocks' start.
var epoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// healthService answers Check and List at once, and Watch with one
// message.
type healthService struct {
	healthpb.UnimplementedHealthServer
}

func (healthService) Check(context.Context, *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

func (healthService) List(context.Context, *healthpb.HealthListRequest) (*healthpb.HealthListResponse, error) {
	return &healthpb.HealthListResponse{}, nil
}

func (healthService) Watch(_ *healthpb.HealthCheckRequest, s grpc.ServerStreamingServer[healthpb.HealthCheckResponse]) error {
	return s.Send(&healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING})
}

// addrListener is an in-memory listener whose connections report the
// remote address their dialer chose, so that tests key calls by peer
// addresses without a network.
type addrListener struct {
	*bufconn.Listener
	dialMu sync.Mutex // one dial at a time: the queue pairs dials with accepts
	mu     sync.Mutex
	queue  []net.Addr
}

func newAddrListener() *addrListener {
	return &addrListener{Listener: bufconn.Listen(1 << 20)}
}

// Accept returns the next connection, reporting the address its dialer
// chose.
func (l *addrListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	a := l.queue[0]
	l.queue = l.queue[1:]
	l.mu.Unlock()
	return &addrConn{Conn: c, remote: a}, nil
}

// dial connects as remote, "ip:port" (any other text keeps bufconn's
// address, which has no IP).
func (l *addrListener) dial(ctx context.Context, remote string) (net.Conn, error) {
	l.dialMu.Lock()
	defer l.dialMu.Unlock()
	var a net.Addr
	if ap, err := netip.ParseAddrPort(remote); err == nil {
		a = net.TCPAddrFromAddrPort(ap)
	}
	l.mu.Lock()
	l.queue = append(l.queue, a)
	l.mu.Unlock()
	return l.Listener.DialContext(ctx)
}

type addrConn struct {
	net.Conn
	remote net.Addr
}

func (c *addrConn) RemoteAddr() net.Addr {
	if c.remote == nil {
		return c.Conn.RemoteAddr()
	}
	return c.remote
}

// server is a gRPC server on an addrListener, serving healthService.
type server struct {
	tb  testing.TB
	lis *addrListener
}

// serve starts a server limited by l (after the interceptors in first),
// stopped when the test ends.
func serve(tb testing.TB, l *sluicegrpc.Limiter, first []grpc.UnaryServerInterceptor, opts ...grpc.ServerOption) *server {
	tb.Helper()
	unary := append(first, l.UnaryServerInterceptor())
	opts = append(opts, grpc.ChainUnaryInterceptor(unary...), grpc.ChainStreamInterceptor(l.StreamServerInterceptor()))
	srv := grpc.NewServer(opts...)
	healthpb.RegisterHealthServer(srv, healthService{})
	s := &server{tb: tb, lis: newAddrListener()}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(s.lis) }()
	tb.Cleanup(func() { srv.Stop(); <-done })
	return s
}

// conn returns a client connection that reaches the server as remote
// ("ip:port").
func (s *server) conn(remote string, opts ...grpc.DialOption) *grpc.ClientConn {
	s.tb.Helper()
	opts = append(opts,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) { return s.lis.dial(ctx, addr) }))
	cc, err := grpc.NewClient("passthrough:///"+remote, opts...)
	if err != nil {
		s.tb.Fatal(err)
	}
	s.tb.Cleanup(func() { _ = cc.Close() })
	return cc
}

// client returns a health client reaching the server as remote.
func (s *server) client(remote string, opts ...grpc.DialOption) healthpb.HealthClient {
	return healthpb.NewHealthClient(s.conn(remote, opts...))
}

// fakeStore returns a memstore on a fake clock at epoch, and the clock.
func fakeStore(tb testing.TB) (*memstore.Store, *storetest.Clock) {
	tb.Helper()
	return fakeStoreAt(tb, epoch)
}

// fakeStoreAt returns a memstore on a fake clock at t0, and the clock.
func fakeStoreAt(tb testing.TB, t0 time.Time) (*memstore.Store, *storetest.Clock) {
	tb.Helper()
	clk := storetest.NewClock(t0)
	st := memstore.New(memstore.Config{Clock: clk, SweepInterval: -1})
	tb.Cleanup(func() { _ = st.Close(context.Background()) })
	return st, clk
}

// newLimiter returns New(store, set, opts...), failing the test on an
// error.
func newLimiter(tb testing.TB, store sluice.Store, set rules.Source, opts ...sluicegrpc.Option) *sluicegrpc.Limiter {
	tb.Helper()
	opts = append([]sluicegrpc.Option{decide.WithLogger(slog.New(slog.DiscardHandler))}, opts...)
	l, err := sluicegrpc.New(store, set, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	return l
}

// call is one unary call's outcome: its error, and its header and
// trailer metadata.
type call struct {
	err             error
	header, trailer metadata.MD
}

// check calls Check with md as outgoing metadata.
func check(tb testing.TB, c healthpb.HealthClient, md ...string) call {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if len(md) > 0 {
		ctx = metadata.AppendToOutgoingContext(ctx, md...)
	}
	var r call
	_, r.err = c.Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Header(&r.header), grpc.Trailer(&r.trailer))
	return r
}

// failingStore fails every call with err.
type failingStore struct{ err error }

func (s failingStore) Take(context.Context, []sluice.Hit, []sluice.Result) error { return s.err }

// unavailable is a store failure whose breaker stays open for retry.
func unavailable(retry time.Duration) error {
	return &sluice.StoreError{Op: "test: take", Kind: sluice.ErrUnavailable, RetryAfter: retry}
}

// decisions records the decisions and store calls observed.
type decisions struct {
	mu    sync.Mutex
	list  []sluice.Decision
	calls []sluice.StoreCall
}

func (d *decisions) Observe(_ context.Context, dec sluice.Decision) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.list = append(d.list, dec)
}

func (d *decisions) ObserveStoreCall(_ context.Context, c sluice.StoreCall) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls = append(d.calls, c)
}

// outcomes returns "rule:outcome" of each decision, in order.
func (d *decisions) outcomes() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var b []string
	for _, dec := range d.list {
		b = append(b, dec.Rule+":"+dec.Outcome.String())
	}
	return strings.Join(b, " ")
}
