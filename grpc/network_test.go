package sluicegrpc_test

import (
	"context"
	"github.com/sluicehq/sluice/decide"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	sluicegrpc "github.com/sluicehq/sluice/grpc"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/rules"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// TestOverTCP: over a real loopback connection, calls are keyed by the
// TCP peer's address, and refusals reach the client with their details.
func TestOverTCP(t *testing.T) {
	var mu sync.Mutex
	var seen, hosts []string
	ip := keyfunc.ClientIP()
	recording := keyfunc.New("ip", func(r *http.Request) (string, error) {
		id, err := ip.Identity(r)
		mu.Lock()
		seen, hosts = append(seen, id), append(hosts, r.Host)
		mu.Unlock()
		return id, err
	})
	store, clk := fakeStore(t)
	set := rules.MustNew(rules.Rule{Name: "per-ip", Key: recording, Limit: sluice.PerMinute(1)})
	l := newLimiter(t, store, set, decide.WithClock(clk))
	c, addr := tcpServer(t, l)
	for i, want := range []codes.Code{codes.OK, codes.ResourceExhausted} {
		r := check(t, c)
		if got := status.Code(r.err); got != want {
			t.Fatalf("call %d: %v, want %v", i, r.err, want)
		}
		if want != codes.OK {
			if d, ok := sluicegrpc.RetryDelay(r.err); !ok || d != time.Minute {
				t.Errorf("RetryDelay = %v, %v; want 1m", d, ok)
			}
			if got := r.header.Get("retry-after"); len(got) != 1 || got[0] != "60" {
				t.Errorf("retry-after %q", got)
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 || seen[0] != "127.0.0.1" || seen[1] != "127.0.0.1" {
		t.Errorf("keyed by %q, want the loopback peer", seen)
	}
	if len(hosts) != 2 || hosts[0] != addr {
		t.Errorf("hosts %q, want the :authority %s", hosts, addr)
	}
}

// tcpServer serves healthService limited by l on a loopback port, and
// returns a client of it and the server's address.
func tcpServer(t *testing.T, l *sluicegrpc.Limiter, first ...grpc.UnaryServerInterceptor) (healthpb.HealthClient, string) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(append(first, l.UnaryServerInterceptor())...),
		grpc.ChainStreamInterceptor(l.StreamServerInterceptor()))
	healthpb.RegisterHealthServer(srv, healthService{})
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(lis) }()
	t.Cleanup(func() { srv.Stop(); <-done })
	cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cc.Close() })
	return healthpb.NewHealthClient(cc), lis.Addr().String()
}

// TestRedisStore: over TCP, against a real Redis: a call's rules are
// decided together, a refused call consumes nothing in its other rules,
// and the retry delay comes from the Redis server's clock.
func TestRedisStore(t *testing.T) {
	store := redisStore(t)
	obs := &decisions{}
	users := keyfunc.User(func(ctx context.Context) (string, bool) {
		u, ok := ctx.Value(userKey{}).(string)
		return u, ok
	})
	set := rules.MustNew(
		rules.Rule{Name: "per-user", Key: users, Limit: sluice.PerMinute(2), OnFail: rules.FailClosed},
		rules.Rule{Name: "per-method", Key: keyfunc.Endpoint(), Limit: sluice.PerMinute(100), OnFail: rules.FailClosed},
	)
	c, _ := tcpServer(t, newLimiter(t, store, set, decide.WithObserver(obs)), authenticate)
	for i, s := range []struct {
		user string
		want codes.Code
	}{{"alice", codes.OK}, {"alice", codes.OK}, {"alice", codes.ResourceExhausted}, {"bob", codes.OK}} {
		r := check(t, c, "authorization", s.user)
		if got := status.Code(r.err); got != s.want {
			t.Fatalf("call %d (%s): %v, want %v", i, s.user, r.err, s.want)
		}
		if r.err == nil {
			continue
		}
		if d, ok := sluicegrpc.RetryDelay(r.err); !ok || d <= 29*time.Second || d > 30*time.Second {
			t.Errorf("RetryDelay = %v, %v; want just under 30s", d, ok)
		}
		if v := sluicegrpc.Violations(r.err); len(v) != 1 || v[0].GetQuotaId() != "per-user" {
			t.Errorf("violations %v, want per-user", v)
		}
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	last := obs.list[len(obs.list)-1]
	if last.Rule != "per-method" || last.Outcome != sluice.OutcomeAllowed || last.Result.Remaining != 97 {
		t.Errorf("bob's per-method decision %+v: want allowed with 97 remaining (the refused call took nothing)", last)
	}
}
