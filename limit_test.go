package sluice_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
)

func TestLimitValidate(t *testing.T) {
	cases := []struct {
		limit sluice.Limit
		want  string // "" for valid
	}{
		{sluice.PerSecond(10), ""},
		{sluice.PerMinute(100).WithBurst(20), ""},
		{sluice.Per(1_000_000, time.Second), ""},
		{sluice.Per(1, time.Millisecond), ""},
		{sluice.PerHour(0), "rate 0"},
		{sluice.PerSecond(-1), "rate -1"},
		{sluice.Per(1, 999*time.Microsecond), "at least 1ms"},
		{sluice.Per(1, time.Millisecond+time.Nanosecond), "whole number of microseconds"},
		{sluice.PerSecond(1).WithBurst(-2), "burst -2"},
		{sluice.Per(1_000_001, time.Second), "one event per microsecond"},
		{sluice.Per(1, 40*365*24*time.Hour), "longer than"},
		{sluice.PerSecond(1).WithBurst(1 << 40), "longer than"},
		{sluice.PerSecond(1).WithBurst(1 << 62), "longer than"},
	}
	for _, tc := range cases {
		err := tc.limit.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v", tc.limit, err)
		case tc.want != "" && (!errors.Is(err, sluice.ErrInvalidLimit) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: err = %v, want ErrInvalidLimit saying %q", tc.limit, err, tc.want)
		}
	}
}

func TestLimitArithmetic(t *testing.T) {
	l := sluice.PerSecond(3)
	if l.Capacity() != 3 || l.IntervalMicros() != 333_334 || l.PeriodMicros() != 1_000_000 {
		t.Fatalf("%v: capacity %d interval %d period %d", l, l.Capacity(), l.IntervalMicros(), l.PeriodMicros())
	}
	if got := sluice.PerMinute(100).WithBurst(20).Capacity(); got != 20 {
		t.Fatalf("capacity %d", got)
	}
	// Every valid limit keeps capacity × interval + now below 2^53.
	for _, l := range []sluice.Limit{sluice.Per(1, time.Duration(sluice.MaxSpan)*time.Microsecond), sluice.PerSecond(1).WithBurst(sluice.MaxSpan / 1_000_000)} {
		if err := l.Validate(); err != nil {
			t.Fatal(err)
		}
		if span := l.Capacity() * l.IntervalMicros(); span > sluice.MaxSpan {
			t.Fatalf("%v: span %d", l, span)
		}
	}
}

func TestLimitString(t *testing.T) {
	for l, want := range map[sluice.Limit]string{
		sluice.PerSecond(10):                     "10/1s",
		sluice.PerMinute(100).WithBurst(20):      "100/1m burst 20",
		sluice.PerHour(5).WithBurst(5):           "5/1h",
		sluice.Per(10, 100*time.Millisecond):     "10/100ms",
		sluice.Per(7, 90*time.Second):            "7/90s",
		sluice.Per(1, 36*time.Hour).WithBurst(2): "1/36h burst 2",
	} {
		if got := l.String(); got != want {
			t.Errorf("%#v.String() = %q, want %q", l, got, want)
		}
	}
}

func TestAlgorithmNames(t *testing.T) {
	for _, a := range []sluice.Algorithm{sluice.TokenBucket} {
		got, err := sluice.ParseAlgorithm(strings.ToUpper(strings.ReplaceAll(a.String(), "_", "-")))
		if err != nil || got != a {
			t.Fatalf("ParseAlgorithm(%v): %v, %v", a, got, err)
		}
	}
	if _, err := sluice.ParseAlgorithm("leaky"); err == nil || !strings.Contains(err.Error(), "token_bucket") {
		t.Fatalf("unknown algorithm: %v", err)
	}
	if s := sluice.Algorithm(42).String(); s != "Algorithm(42)" || sluice.Algorithm(42).Valid() {
		t.Fatalf("Algorithm(42): %q", s)
	}
}

func TestStoreError(t *testing.T) {
	cause := errors.New("EOF")
	err := fmt.Errorf("wrapped: %w", &sluice.StoreError{Op: "redisstore: take", Kind: sluice.ErrUnavailable, Ambiguous: true, Err: cause})
	if !errors.Is(err, sluice.ErrUnavailable) || !errors.Is(err, cause) || !sluice.IsAmbiguous(err) {
		t.Fatalf("errors.Is / IsAmbiguous failed for %v", err)
	}
	if got := err.Error(); got != "wrapped: redisstore: take: store unavailable (outcome ambiguous): EOF" {
		t.Fatalf("Error() = %q", got)
	}
	if sluice.IsAmbiguous(cause) || sluice.IsAmbiguous(&sluice.StoreError{Op: "x", Kind: sluice.ErrBreakerOpen}) {
		t.Fatal("IsAmbiguous true for an unambiguous error")
	}
}

func TestHitCheck(t *testing.T) {
	ok := sluice.Hit{Key: "k", Limit: sluice.PerSecond(1), Cost: 1}
	if err := ok.Check(); err != nil {
		t.Fatal(err)
	}
	for _, h := range []sluice.Hit{
		{Key: "k", Limit: sluice.PerSecond(1), Cost: -1},
		{Limit: sluice.PerSecond(1), Cost: 1},
		{Key: "k", Limit: sluice.PerSecond(1), Algorithm: 77},
	} {
		if err := h.Check(); !errors.Is(err, sluice.ErrInvalidHit) {
			t.Errorf("%+v: %v", h, err)
		}
	}
	if err := (&sluice.Hit{Key: "k"}).Check(); !errors.Is(err, sluice.ErrInvalidLimit) {
		t.Errorf("zero limit: %v", err)
	}
}

func TestOutcomeNames(t *testing.T) {
	want := []string{"allowed", "denied", "shadow_denied", "failed_open", "failed_closed", "local"}
	for i, w := range want {
		if got := sluice.Outcome(i).String(); got != w {
			t.Errorf("Outcome(%d) = %q, want %q", i, got, w)
		}
	}
}
