package sluicegrpc_test

import (
	"context"
	"errors"
	"io"
	"slices"
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
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// joined is what a Join stream ended with: the values the handler
// received (as it answered them), the status and the trailer.
type joined struct {
	answer  string
	err     error
	trailer metadata.MD
}

// joinStream sends values on a Join stream of cc and closes it.
func joinStream(t *testing.T, cc *grpc.ClientConn, values ...string) joined {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := cc.NewStream(ctx, &joinDesc, joinMethod)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range values {
		if err := cs.SendMsg(wrapperspb.String(v)); errors.Is(err, io.EOF) {
			break // the stream ended: RecvMsg says how
		} else if err != nil {
			t.Fatal(err)
		}
	}
	_ = cs.CloseSend()
	out := new(wrapperspb.StringValue)
	var j joined
	j.err = cs.RecvMsg(out)
	j.answer = out.Value
	j.trailer = cs.Trailer()
	return j
}

// messageServer serves Join through handler, limited by open (the
// limiter's rules) and msgs (its message rules), on a fake clock.
func messageServer(t *testing.T, open, msgs *rules.Set, handler grpc.StreamHandler, opts ...sluicegrpc.Option) *server {
	t.Helper()
	store, clk := fakeStore(t)
	opts = append([]sluicegrpc.Option{decide.WithClock(clk), sluicegrpc.WithMessageRules(msgs)}, opts...)
	return serve(t, newLimiter(t, store, open, opts...), nil, grpc.UnknownServiceHandler(handler))
}

// TestMessageRules: with WithMessageRules, each message a stream receives
// counts against the message rules in one decision; the message over the
// limit ends the stream with ResourceExhausted, the exact retry delay in
// its RetryInfo and trailer, whatever the handler returns; the stream's
// open is still limited by the limiter's own rules.
func TestMessageRules(t *testing.T) {
	perIP := func(name string, n int64) *rules.Set {
		return rules.MustNew(rules.Rule{Name: name, Key: keyfunc.ClientIP(), Limit: sluice.PerMinute(n)})
	}
	ignoring := func(_ any, ss grpc.ServerStream) error { // a handler that drops Recv's errors
		for {
			if err := ss.RecvMsg(new(wrapperspb.StringValue)); err != nil {
				return ss.SendMsg(wrapperspb.String("ignored"))
			}
		}
	}
	tests := []struct {
		name    string
		handler grpc.StreamHandler
		open    int64
		streams [][]string
		want    []codes.Code
		answers []string
	}{
		{"messages over the limit end the stream", join, 10,
			[][]string{{"a", "b"}, {"c", "d", "e"}, {"f"}},
			[]codes.Code{codes.OK, codes.ResourceExhausted, codes.ResourceExhausted}, []string{"a,b", "", ""}},
		{"a handler dropping the refusal cannot admit the stream", ignoring, 10,
			[][]string{{"a", "b", "c", "d"}},
			[]codes.Code{codes.ResourceExhausted}, []string{""}},
		{"the open is still limited", join, 1,
			[][]string{{"a"}, {}},
			[]codes.Code{codes.OK, codes.ResourceExhausted}, []string{"a", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var seen decisions
			srv := messageServer(t, perIP("open", tt.open), perIP("msgs", 3), tt.handler, decide.WithObserver(&seen))
			cc := srv.conn("203.0.113.7:1")
			for i, values := range tt.streams {
				j := joinStream(t, cc, values...)
				if got := status.Code(j.err); got != tt.want[i] {
					t.Fatalf("stream %d: %v, want %v", i, j.err, tt.want[i])
				}
				if j.answer != tt.answers[i] {
					t.Errorf("stream %d answered %q, want %q", i, j.answer, tt.answers[i])
				}
				if tt.want[i] == codes.OK {
					continue
				}
				vs := sluicegrpc.Violations(j.err)
				if len(vs) != 1 {
					t.Fatalf("stream %d: violations %v", i, vs)
				}
				retry := 20 * time.Second // msgs: a token every 20 s
				if vs[0].QuotaId == "open" {
					retry = time.Minute
				}
				if d, ok := sluicegrpc.RetryDelay(j.err); !ok || d != retry {
					t.Errorf("stream %d: RetryDelay = %v, %v; want %v", i, d, ok, retry)
				}
				if vs[0].QuotaId == "msgs" {
					wantMD(t, "trailer", j.trailer, map[string]string{
						"retry-after": "20", "grpc-retry-pushback-ms": "20000",
						"ratelimit-policy": `"msgs";q=3;w=60`,
					})
				}
			}
			if tt.name == "messages over the limit end the stream" {
				// Each stream's open, then each message received.
				want := "open:allowed msgs:allowed msgs:allowed open:allowed msgs:allowed msgs:denied open:allowed msgs:denied"
				if got := seen.outcomes(); got != want {
					t.Errorf("decisions:\n got %s\nwant %s", got, want)
				}
			}
		})
	}
}

// TestMessageRulesUnary: unary calls are decided by the limiter's rules
// only, never by the message rules; a server-streaming call's one message
// is.
func TestMessageRulesUnary(t *testing.T) {
	none := rules.MustNew(rules.Rule{Name: "open", Key: keyfunc.Global(), Limit: sluice.PerMinute(100)})
	msgs := rules.MustNew(rules.Rule{Name: "msgs", Key: keyfunc.Global(), Limit: sluice.PerMinute(1)})
	store, clk := fakeStore(t)
	srv := serve(t, newLimiter(t, store, none, decide.WithClock(clk), sluicegrpc.WithMessageRules(msgs)), nil)
	c := srv.client("203.0.113.7:1")
	for i := range 3 {
		if r := check(t, c); r.err != nil {
			t.Fatalf("call %d: %v", i, r.err)
		}
	}
	// A server-streaming call's one message counts.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i, want := range []codes.Code{codes.OK, codes.ResourceExhausted} {
		w, err := c.Watch(ctx, &healthpb.HealthCheckRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err = w.Recv(); status.Code(err) != want {
			t.Fatalf("watch %d: %v, want %v", i, err, want)
		}
	}
}

// TestMessageRulesOption: a nil message rule set is refused.
func TestMessageRulesOption(t *testing.T) {
	store, _ := fakeStore(t)
	open := rules.MustNew(rules.Rule{Name: "open", Key: keyfunc.Global(), Limit: sluice.PerMinute(100)})
	for _, set := range []rules.Source{nil, (*rules.Set)(nil)} {
		if _, err := sluicegrpc.New(store, open, sluicegrpc.WithMessageRules(set)); !errors.Is(err, sluice.ErrInvalidConfig) {
			t.Errorf("WithMessageRules(%#v): %v, want ErrInvalidConfig", set, err)
		}
	}
}

// TestMessageRulesOneCall: each message is decided by all of its rules in
// one store call.
func TestMessageRulesOneCall(t *testing.T) {
	open := rules.MustNew(rules.Rule{Name: "open", Key: keyfunc.ClientIP(), Limit: sluice.PerMinute(10)})
	msgs := rules.MustNew(
		rules.Rule{Name: "msgs", Key: keyfunc.ClientIP(), Limit: sluice.PerMinute(10)},
		rules.Rule{Name: "msgs-all", Key: keyfunc.Global(), Limit: sluice.PerMinute(100)},
	)
	var seen decisions
	srv := messageServer(t, open, msgs, join, decide.WithObserver(&seen))
	if j := joinStream(t, srv.conn("203.0.113.7:1"), "a", "b", "c"); j.err != nil {
		t.Fatal(j.err)
	}
	seen.mu.Lock()
	defer seen.mu.Unlock()
	var hits []int
	for _, c := range seen.calls {
		hits = append(hits, c.Hits)
	}
	if want := []int{1, 2, 2, 2}; !slices.Equal(hits, want) {
		t.Errorf("store calls' hits %v, want %v: the open, then one call per message", hits, want)
	}
}
