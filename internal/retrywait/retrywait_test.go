package retrywait_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/retrywait"
)

var errTooLong = errors.New("too long")

func TestSetters(t *testing.T) {
	noSleep := func(context.Context, time.Duration) error { return nil }
	for _, tc := range []struct {
		name string
		set  func(p *retrywait.Policy) error
		want string // "" when valid
	}{
		{"wait 0", func(p *retrywait.Policy) error { return p.SetMaxWait(0) }, ""},
		{"negative wait", func(p *retrywait.Policy) error { return p.SetMaxWait(-1) }, "WithMaxWait: negative -1ns"},
		{"retries 0", func(p *retrywait.Policy) error { return p.SetMaxRetries(0) }, ""},
		{"negative retries", func(p *retrywait.Policy) error { return p.SetMaxRetries(-1) }, "WithMaxRetries: negative -1"},
		{"jitter 1", func(p *retrywait.Policy) error { return p.SetJitter(1) }, ""},
		{"jitter above 1", func(p *retrywait.Policy) error { return p.SetJitter(1.5) }, "WithJitter: 1.5 is not within 0 to 1"},
		{"jitter below 0", func(p *retrywait.Policy) error { return p.SetJitter(-0.1) }, "WithJitter: -0.1 is not within 0 to 1"},
		{"time", func(p *retrywait.Policy) error { return p.SetTime(time.Now, noSleep) }, ""},
		{"nil clock", func(p *retrywait.Policy) error { return p.SetTime(nil, noSleep) }, "WithTime: nil clock or sleep"},
		{"nil sleep", func(p *retrywait.Policy) error { return p.SetTime(time.Now, nil) }, "WithTime: nil clock or sleep"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := retrywait.New(errTooLong, "call")
			err := tc.set(&p)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("error %v, want none", err)
			case tc.want != "" && (err == nil || err.Error() != tc.want):
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	p := retrywait.New(errTooLong, "call")
	if p.MaxWait != 30*time.Second || p.MaxRetries != 3 || p.Jitter != 0.2 {
		t.Errorf("defaults %v, %d, %v; want 30s, 3, 0.2", p.MaxWait, p.MaxRetries, p.Jitter)
	}
	if !p.Retries(3) || p.Retries(4) {
		t.Error("the default policy should send a call again after its 3rd refusal, not after its 4th")
	}
}

func TestJittered(t *testing.T) {
	for _, tc := range []struct {
		rand    float64
		attempt int
		want    time.Duration
	}{
		{0, 1, time.Second},                               // never shorter
		{0.5, 1, time.Second + 100*time.Millisecond},      // half of 0.2
		{0.5, 2, time.Second + 200*time.Millisecond},      // the range doubles
		{0.5, 6, time.Second + 3200*time.Millisecond},     // 32 times
		{0.5, 9, time.Second + 3200*time.Millisecond},     // and no more
		{0.999, 1, time.Second + 199800*time.Microsecond}, // below the share
	} {
		p := retrywait.New(errTooLong, "call")
		p.Rand = func() float64 { return tc.rand }
		if got := p.Jittered(time.Second, tc.attempt); got != tc.want {
			t.Errorf("rand %v, attempt %d: %v, want %v", tc.rand, tc.attempt, got, tc.want)
		}
	}
}

func TestCheck(t *testing.T) {
	now := time.Unix(1000, 0)
	deadline := func(d time.Duration) context.Context {
		ctx, cancel := context.WithDeadline(context.Background(), now.Add(d))
		t.Cleanup(cancel)
		return ctx
	}
	for _, tc := range []struct {
		name         string
		ctx          context.Context
		waited, wait time.Duration
		want         error // nil: fits
	}{
		{"within", context.Background(), 10 * time.Second, 20 * time.Second, nil},
		{"at the maximum", context.Background(), 0, 30 * time.Second, nil},
		{"past the maximum", context.Background(), 10 * time.Second, 20*time.Second + 1, errTooLong},
		{"before the deadline", deadline(2 * time.Second), 0, time.Second, nil},
		{"at the deadline", deadline(2 * time.Second), 0, 2 * time.Second, context.DeadlineExceeded},
		{"past the deadline", deadline(2 * time.Second), 0, 3 * time.Second, context.DeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := retrywait.New(errTooLong, "call")
			p.Now = func() time.Time { return now }
			err := p.Check(tc.ctx, tc.waited, tc.wait)
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("Check: %v, want %v", err, tc.want)
			}
			if fits := p.Fits(tc.ctx, tc.waited, tc.wait); fits != (err == nil) {
				t.Errorf("Fits %v, Check %v", fits, err)
			}
		})
	}
}

func TestSleepEndsWithContext(t *testing.T) {
	cause := errors.New("stop")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(cause)
	if err := retrywait.Sleep(ctx, time.Hour); !errors.Is(err, cause) {
		t.Fatalf("Sleep: %v, want the context's cause", err)
	}
	if err := retrywait.Sleep(context.Background(), 0); err != nil {
		t.Fatalf("Sleep(0): %v", err)
	}
}
