package redisstore

import (
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
)

// The short form answers plain token-bucket hits with reset-after and mark;
// the rest is derived as take.lua says.
func TestDecodeShortTakeReply(t *testing.T) {
	lim := sluice.PerSecond(10).WithBurst(5) // 100 ms interval, tau 500 ms
	for _, tc := range []struct {
		name       string
		cost       int64
		reset, mrk int64
		want       sluice.Result
	}{
		{"took its cost", 2, 300_000, 7_000_000,
			sluice.Result{Allowed: true, Limit: lim, Remaining: 2, ResetAfter: 300 * time.Millisecond, Receipt: sluice.Receipt{Taken: 2, Mark: 7_000_000}}},
		{"took the last tokens", 1, 500_000, 7_000_000,
			sluice.Result{Allowed: true, Limit: lim, ResetAfter: 500 * time.Millisecond, Receipt: sluice.Receipt{Taken: 1, Mark: 7_000_000}}},
		{"refused", 3, 400_000, 0,
			sluice.Result{Limit: lim, Remaining: 1, ResetAfter: 400 * time.Millisecond, RetryAfter: 200 * time.Millisecond}},
		{"refused, in debt", 1, 700_000, 0,
			sluice.Result{Limit: lim, ResetAfter: 700 * time.Millisecond, RetryAfter: 300 * time.Millisecond}},
		{"unsatisfiable", 6, 100_000, 0,
			sluice.Result{Unsatisfiable: true, Limit: lim, Remaining: 4, ResetAfter: 100 * time.Millisecond}},
		{"allowed, took nothing (its request was refused)", 2, 100_000, 0,
			sluice.Result{Allowed: true, Limit: lim, Remaining: 4, ResetAfter: 100 * time.Millisecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := decodeStore()
			hits := []sluice.Hit{{Key: "a", Limit: lim, Cost: tc.cost, Shadow: tc.cost == 3}}
			out := make([]sluice.Result, 1)
			r := s.newRequest(hits, out)
			if err := s.finish([]any{int64(-1), tc.reset, tc.mrk}, []*request{&r}); err != nil {
				t.Fatal(err)
			}
			if out[0] != tc.want {
				t.Errorf("%+v, want %+v", out[0], tc.want)
			}
		})
	}
}

// A lone plain token-bucket hit that found its bucket full is answered
// with its mark alone: reset-after is its cost's worth of intervals, as
// through a coalescer's batch of one (split).
func TestDecodeBareMark(t *testing.T) {
	lim := sluice.PerSecond(10).WithBurst(5) // 100 ms interval
	want := sluice.Result{Allowed: true, Limit: lim, Remaining: 3, ResetAfter: 200 * time.Millisecond,
		Receipt: sluice.Receipt{Taken: 2, Mark: 7_000_000}}
	for _, shadow := range []bool{false, true} {
		s := decodeStore()
		hits := []sluice.Hit{{Key: "a", Limit: lim, Cost: 2, Shadow: shadow}}
		out := make([]sluice.Result, 1)
		r := s.newRequest(hits, out)
		if err := s.finish(int64(7_000_000), []*request{&r}); err != nil || out[0] != want {
			t.Errorf("shadow %v: %+v, %v; want %+v", shadow, out[0], err, want)
		}
		out[0] = sluice.Result{}
		parts, short, err := s.split(int64(7_000_000), []*request{&r}, nil)
		if err != nil || !short || len(parts) != 1 {
			t.Fatalf("shadow %v: split: %v, %v, %v", shadow, parts, short, err)
		}
		if err := r.decode(parts[0], short); err != nil || out[0] != want {
			t.Errorf("shadow %v, split: %+v, %v; want %+v", shadow, out[0], err, want)
		}
	}
}

func TestDecodeRefusesMalformedShortReplies(t *testing.T) {
	tb := sluice.Hit{Key: "a", Limit: sluice.PerSecond(10), Cost: 1}
	peek := tb
	peek.Peek = true
	window := tb
	window.Algorithm = sluice.FixedWindow
	for _, tc := range []struct {
		name  string
		hits  []sluice.Hit
		reply []any
	}{
		{"too short", []sluice.Hit{tb, tb}, []any{int64(-1), int64(1), int64(2), int64(3)}},
		{"too long", []sluice.Hit{tb}, []any{int64(-1), int64(1), int64(2), int64(3)}},
		{"a string", []sluice.Hit{tb}, []any{int64(-1), "1", int64(2)}},
		{"a negative mark", []sluice.Hit{tb}, []any{int64(-1), int64(1), int64(-2)}},
		{"for a peek", []sluice.Hit{peek}, []any{int64(-1), int64(1), int64(2)}},
		{"for a window", []sluice.Hit{window}, []any{int64(-1), int64(1), int64(2)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := decodeStore()
			r := s.newRequest(tc.hits, make([]sluice.Result, len(tc.hits)))
			err := s.finish(tc.reply, []*request{&r})
			var se *sluice.StoreError
			if !errors.As(err, &se) || !se.Ambiguous || !errors.Is(err, sluice.ErrUnavailable) {
				t.Fatalf("reply %#v: error %v, want an ambiguous ErrUnavailable", tc.reply, err)
			}
		})
	}
}
