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
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/store/storetest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// fakeTime is a client interceptor's time on a fake clock: sleeping moves
// the clock (and so the store's buckets) and records the wait.
type fakeTime struct {
	clk    *storetest.Clock
	slept  []time.Duration
	before func(ctx context.Context) // called at each sleep, if set
}

func (f *fakeTime) sleep(ctx context.Context, d time.Duration) error {
	if f.before != nil {
		f.before(ctx)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	f.slept = append(f.slept, d)
	f.clk.Advance(d)
	return nil
}

// TestClientInterceptor: the client interceptor waits out refusals that
// carry a retry delay, on its clock, within its bounds and the call's
// context, and returns anything else as it is.
func TestClientInterceptor(t *testing.T) {
	type result struct {
		code     codes.Code
		slept    string
		refused  error // a *RefusedError wrapping this, or nil
		attempts int
	}
	tests := []struct {
		name     string
		store    func(t *testing.T, clk *storetest.Clock) sluice.Store
		onFail   rules.OnFail
		opts     []sluicegrpc.ClientOption
		deadline time.Duration // on the fake clock; 0: none
		cancel   bool          // cancel the call's context at its first wait
		want     result
	}{
		{name: "waits out a refusal, exactly", want: result{code: codes.OK, slept: "1m0s"}},
		{name: "jitter lengthens the wait", opts: []sluicegrpc.ClientOption{sluicegrpc.WithJitter(0.5), sluicegrpc.WithRand(func() float64 { return 1 })},
			want: result{code: codes.OK, slept: "1m30s"}},
		{name: "no retries", opts: []sluicegrpc.ClientOption{sluicegrpc.WithMaxRetries(0)},
			want: result{code: codes.ResourceExhausted}},
		{name: "a wait beyond the maximum", opts: []sluicegrpc.ClientOption{sluicegrpc.WithMaxWait(59 * time.Second)},
			want: result{code: codes.ResourceExhausted, refused: sluicegrpc.ErrWaitTooLong, attempts: 1}},
		{name: "a wait beyond the deadline", deadline: 59 * time.Second,
			want: result{code: codes.ResourceExhausted, refused: context.DeadlineExceeded, attempts: 1}},
		{name: "a wait within the deadline", deadline: 61 * time.Second, want: result{code: codes.OK, slept: "1m0s"}},
		{name: "cancelled while waiting", cancel: true, want: result{code: codes.Canceled}},
		{name: "fail-closed Unavailable is not retried by default", store: failing, onFail: rules.FailClosed,
			want: result{code: codes.Unavailable}},
		{name: "fail-closed Unavailable is retried for idempotent methods", store: failing, onFail: rules.FailClosed,
			opts: []sluicegrpc.ClientOption{sluicegrpc.WithIdempotent(func(m string) bool { return m == "/grpc.health.v1.Health/Check" })},
			want: result{code: codes.Unavailable, slept: "2s 2s 2s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Deadlines are real contexts' deadlines, read on the fake
			// clock: it starts at the real time.
			store, clk := fakeStoreAt(t, time.Now())
			var st sluice.Store = store
			if tt.store != nil {
				st = tt.store(t, clk)
			}
			set := rules.MustNew(rules.Rule{Name: "r", Key: keyfunc.ClientIP(), Limit: sluice.PerMinute(1), OnFail: tt.onFail})
			ft := &fakeTime{clk: clk}
			opts := append([]sluicegrpc.ClientOption{sluicegrpc.WithJitter(0), sluicegrpc.WithMaxWait(5 * time.Minute),
				sluicegrpc.WithTime(clk.Now, ft.sleep)}, tt.opts...)
			intercept, err := sluicegrpc.UnaryClientInterceptor(opts...)
			if err != nil {
				t.Fatal(err)
			}
			srv := serve(t, newLimiter(t, st, set, decide.WithClock(clk)), nil)
			c := healthpb.NewHealthClient(srv.conn("203.0.113.7:1", grpc.WithUnaryInterceptor(intercept)))
			if tt.store == nil { // spend the bucket
				if _, err := c.Check(context.Background(), &healthpb.HealthCheckRequest{}); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.deadline > 0 {
				ctx, cancel = context.WithDeadline(ctx, clk.Now().Add(tt.deadline))
				defer cancel()
			}
			if tt.cancel {
				ft.before = func(context.Context) { cancel() }
			}
			_, err = c.Check(ctx, &healthpb.HealthCheckRequest{})
			got := result{code: status.Code(err), slept: durations(ft.slept)}
			var re *sluicegrpc.RefusedError
			if errors.As(err, &re) {
				got.refused, got.attempts = tt.want.refused, re.Attempts
				if !errors.Is(err, tt.want.refused) {
					t.Errorf("%v does not wrap %v", err, tt.want.refused)
				}
				if d, ok := sluicegrpc.RetryDelay(err); !ok || d != time.Minute {
					t.Errorf("RetryDelay of the RefusedError = %v, %v", d, ok)
				}
			}
			if got != tt.want {
				t.Errorf("got %+v (%v), want %+v", got, err, tt.want)
			}
		})
	}
}

// failing is a store failing every call, its breaker open for 2 s.
func failing(*testing.T, *storetest.Clock) sluice.Store {
	return failingStore{unavailable(2 * time.Second)}
}

func durations(ds []time.Duration) string {
	s := make([]string, len(ds))
	for i, d := range ds {
		s[i] = d.String()
	}
	return strings.Join(s, " ")
}

// TestClientOptions: invalid client options are errors wrapping
// sluice.ErrInvalidConfig.
func TestClientOptions(t *testing.T) {
	tests := []struct {
		name string
		opt  sluicegrpc.ClientOption
		want string
	}{
		{"nil", nil, "sluicegrpc: nil ClientOption"},
		{"negative wait", sluicegrpc.WithMaxWait(-1), "sluicegrpc: WithMaxWait: negative -1ns"},
		{"negative retries", sluicegrpc.WithMaxRetries(-1), "sluicegrpc: WithMaxRetries: negative -1"},
		{"jitter above 1", sluicegrpc.WithJitter(1.5), "sluicegrpc: WithJitter: 1.5 is not within 0 to 1"},
		{"jitter NaN", sluicegrpc.WithJitter(nan()), "sluicegrpc: WithJitter: NaN is not within 0 to 1"},
		{"nil idempotent", sluicegrpc.WithIdempotent(nil), "sluicegrpc: WithIdempotent: nil function"},
		{"nil sleep", sluicegrpc.WithTime(time.Now, nil), "sluicegrpc: WithTime: nil clock or sleep"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := sluicegrpc.UnaryClientInterceptor(tt.opt)
			if f != nil || !errors.Is(err, sluice.ErrInvalidConfig) || err.Error() != tt.want {
				t.Fatalf("got %v, want %q wrapping ErrInvalidConfig", err, tt.want)
			}
		})
	}
}

func nan() float64 { var zero float64; return zero / zero }
