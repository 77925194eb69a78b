package sluicegrpc_test

import (
	"context"
	"errors"
	"github.com/sluicehq/sluice/decide"
	"io"
	"strconv"
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
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// joinDesc is a client-streaming method that answers the values it
// received, joined by commas.
var joinDesc = grpc.StreamDesc{StreamName: "Join", ClientStreams: true}

const joinMethod = "/test.Collect/Join"

func join(_ any, ss grpc.ServerStream) error {
	var parts []string
	for {
		m := new(wrapperspb.StringValue)
		err := ss.RecvMsg(m)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		parts = append(parts, m.Value)
	}
	return ss.SendMsg(wrapperspb.String(strings.Join(parts, ",")))
}

// streamSetup is a server limiting calls by client IP to 1 a minute on a
// fake clock, and a client connection whose stream interceptor sleeps on
// that clock.
type streamSetup struct {
	cc *grpc.ClientConn
	ft *fakeTime
}

func newStreamSetup(t *testing.T, opts ...sluicegrpc.ClientOption) *streamSetup {
	t.Helper()
	store, clk := fakeStoreAt(t, time.Now())
	set := rules.MustNew(rules.Rule{Name: "r", Key: keyfunc.ClientIP(), Limit: sluice.PerMinute(1)})
	srv := serve(t, newLimiter(t, store, set, decide.WithClock(clk)), nil,
		grpc.UnknownServiceHandler(func(srv any, ss grpc.ServerStream) error { return join(srv, ss) }))
	ft := &fakeTime{clk: clk}
	opts = append([]sluicegrpc.ClientOption{sluicegrpc.WithJitter(0), sluicegrpc.WithMaxWait(5 * time.Minute),
		sluicegrpc.WithTime(clk.Now, ft.sleep)}, opts...)
	intercept, err := sluicegrpc.StreamClientInterceptor(opts...)
	if err != nil {
		t.Fatal(err)
	}
	cc := srv.conn("203.0.113.9:1", grpc.WithStreamInterceptor(intercept))
	// Spend the bucket.
	if _, err := healthpb.NewHealthClient(cc).Check(context.Background(), &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
	}
	return &streamSetup{cc: cc, ft: ft}
}

// sendJoin sends values on a Join stream, closes it and returns the
// answer, as a client following gRPC's conventions does.
func (s *streamSetup) sendJoin(ctx context.Context, values ...string) (string, error) {
	cs, err := s.cc.NewStream(ctx, &joinDesc, joinMethod)
	if err != nil {
		return "", err
	}
	for _, v := range values {
		m := wrapperspb.String(v)
		err := cs.SendMsg(m)
		if errors.Is(err, io.EOF) {
			break // the stream ended: RecvMsg says how
		}
		if err != nil {
			return "", err
		}
		m.Value = "changed after sending" // a sender may reuse its message
	}
	if err := cs.CloseSend(); err != nil {
		return "", err
	}
	out := new(wrapperspb.StringValue)
	if err := cs.RecvMsg(out); err != nil {
		return "", err
	}
	return out.Value, nil
}

// TestStreamClientInterceptorServerStream: a server-streaming call refused
// with a retry delay is started again after it, its request sent again,
// and the client receives the answer of the stream that passed.
func TestStreamClientInterceptorServerStream(t *testing.T) {
	s := newStreamSetup(t)
	w, err := healthpb.NewHealthClient(s.cc).Watch(context.Background(), &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := w.Recv()
	if err != nil {
		t.Fatalf("Recv: %v", err)
	}
	if resp.Status != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("status %v", resp.Status)
	}
	if got := durations(s.ft.slept); got != "1m0s" {
		t.Errorf("slept %q, want 1m0s", got)
	}
	if _, err := w.Recv(); !errors.Is(err, io.EOF) {
		t.Errorf("second Recv: %v, want io.EOF", err)
	}
}

// TestStreamClientInterceptorClientStream: the messages a client-streaming
// call sent before its refusal, and its CloseSend, are sent again on the
// new stream, as they were when sent.
func TestStreamClientInterceptorClientStream(t *testing.T) {
	tests := []struct {
		name   string
		opts   []sluicegrpc.ClientOption
		values int
		want   string // the answer, or the error's code
		slept  string
	}{
		{name: "sent again", values: 3, want: "v0,v1,v2", slept: "1m0s"},
		{name: "as many as are kept", values: sluicegrpc.MaxReplayed, want: "v0,v1,v2,v3,v4,v5,v6,v7,v8,v9,v10,v11,v12,v13,v14,v15", slept: "1m0s"},
		{name: "more than are kept", values: sluicegrpc.MaxReplayed + 1, want: codes.ResourceExhausted.String()},
		{name: "no retries", opts: []sluicegrpc.ClientOption{sluicegrpc.WithMaxRetries(0)}, values: 1, want: codes.ResourceExhausted.String()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStreamSetup(t, tt.opts...)
			values := make([]string, tt.values)
			for i := range values {
				values[i] = "v" + strconv.Itoa(i)
			}
			got, err := s.sendJoin(context.Background(), values...)
			if err != nil {
				got = status.Code(err).String()
			}
			if got != tt.want || durations(s.ft.slept) != tt.slept {
				t.Errorf("got %q (%v), slept %q; want %q, slept %q", got, err, durations(s.ft.slept), tt.want, tt.slept)
			}
		})
	}
}

// TestStreamClientInterceptorBounds: a wait beyond the maximum, or beyond
// the stream's deadline, ends the stream at once with a RefusedError that
// carries the server's status.
func TestStreamClientInterceptorBounds(t *testing.T) {
	tests := []struct {
		name     string
		opts     []sluicegrpc.ClientOption
		deadline time.Duration
		want     error
	}{
		{name: "beyond the maximum", opts: []sluicegrpc.ClientOption{sluicegrpc.WithMaxWait(59 * time.Second)}, want: sluicegrpc.ErrWaitTooLong},
		{name: "beyond the deadline", deadline: 59 * time.Second, want: context.DeadlineExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStreamSetup(t, tt.opts...)
			ctx := context.Background()
			if tt.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithDeadline(ctx, s.ft.clk.Now().Add(tt.deadline))
				defer cancel()
			}
			_, err := s.sendJoin(ctx, "a")
			var re *sluicegrpc.RefusedError
			if !errors.As(err, &re) || !errors.Is(err, tt.want) || status.Code(err) != codes.ResourceExhausted || re.Attempts != 1 {
				t.Fatalf("got %v, want a RefusedError after 1 attempt wrapping %v", err, tt.want)
			}
			if len(s.ft.slept) != 0 {
				t.Errorf("slept %v", s.ft.slept)
			}
		})
	}
}

// TestStreamClientOptions: the stream interceptor refuses invalid options
// as the unary one does.
func TestStreamClientOptions(t *testing.T) {
	f, err := sluicegrpc.StreamClientInterceptor(sluicegrpc.WithMaxRetries(-1))
	if f != nil || !errors.Is(err, sluice.ErrInvalidConfig) {
		t.Fatalf("got %v, want an error wrapping ErrInvalidConfig", err)
	}
}
