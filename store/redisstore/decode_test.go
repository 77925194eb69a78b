package redisstore

import (
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
)

// decodeStore is a decider that only decodes: split reports healed keys
// through it.
func decodeStore() *decider {
	return &decider{keys: newKeyer(defaultPrefix, []byte("test")),
		heal:  &healer{log: slog.New(slog.NewTextHandler(io.Discard, nil))},
		where: func(string) string { return "" }}
}

func TestDecodeTakeReply(t *testing.T) {
	tb := sluice.Hit{Key: "a", Limit: sluice.PerSecond(10), Cost: 2}
	log := sluice.Hit{Key: "b", Limit: sluice.PerSecond(10), Algorithm: sluice.SlidingLog, Cost: 1, Force: true}
	s := decodeStore()
	hits := []sluice.Hit{tb, log}
	out := make([]sluice.Result, 2)
	r := s.newRequest(hits, out)
	reply := []any{int64(1), int64(2), // one key replaced: hit 2's
		int64(1 + 4*2), int64(8), int64(200_000), int64(0), int64(12345), // taken 2 at mark 12345
		int64(2), int64(10), int64(0), int64(0), int64(99), int64(7)} // unsatisfiable, forced: no receipt
	if err := s.finish(reply, []*request{&r}); err != nil {
		t.Fatal(err)
	}
	want := []sluice.Result{
		{Allowed: true, Limit: tb.Limit, Remaining: 8, ResetAfter: 200 * time.Millisecond, Receipt: sluice.Receipt{Taken: 2, Mark: 12345}},
		{Unsatisfiable: true, Limit: log.Limit, Remaining: 10},
	}
	for i := range want {
		if out[i] != want[i] {
			t.Errorf("hit %d: %+v, want %+v", i, out[i], want[i])
		}
	}
}

func TestDecodeRefusesMalformedTakeReplies(t *testing.T) {
	tb := sluice.Hit{Key: "a", Limit: sluice.PerSecond(10), Cost: 2}
	forced := tb
	forced.Force = true
	log := sluice.Hit{Key: "b", Limit: sluice.PerSecond(10), Algorithm: sluice.SlidingLog, Cost: 1}
	ok := []any{int64(0), int64(1), int64(8), int64(0), int64(0), int64(1)}
	for _, tc := range []struct {
		name  string
		hits  []sluice.Hit
		reply any
	}{
		{"a bare integer for a forced hit", []sluice.Hit{forced}, int64(1)},
		{"a bare integer for a log", []sluice.Hit{log}, int64(1)},
		{"a bare integer for two hits", []sluice.Hit{tb, tb}, int64(1)},
		{"a bare zero", []sluice.Hit{tb}, int64(0)},
		{"a bare negative integer", []sluice.Hit{tb}, int64(-1)},
		{"a bare string", []sluice.Hit{tb}, "1"},
		{"empty", []sluice.Hit{tb}, []any{}},
		{"a string", []sluice.Hit{tb}, []any{int64(0), "1", int64(8), int64(0), int64(0), int64(1)}},
		{"too short", []sluice.Hit{tb}, ok[:5]},
		{"too long", []sluice.Hit{tb}, append(append([]any{}, ok...), int64(0))},
		{"no sequence for a log", []sluice.Hit{log}, ok},
		{"negative heal count", []sluice.Hit{tb}, append([]any{int64(-1)}, ok[1:]...)},
		{"heal count past the end", []sluice.Hit{tb}, append([]any{int64(9)}, ok[1:]...)},
		{"healed hit out of range", []sluice.Hit{tb}, append([]any{int64(1), int64(2)}, ok[1:]...)},
		{"negative remaining", []sluice.Hit{tb}, []any{int64(0), int64(1), int64(-8), int64(0), int64(0), int64(1)}},
		{"took more than the cost", []sluice.Hit{tb}, []any{int64(0), int64(1 + 4*3), int64(8), int64(0), int64(0), int64(1)}},
		{"a forced hit with a receipt", []sluice.Hit{forced}, []any{int64(0), int64(1 + 4*2), int64(8), int64(0), int64(0), int64(1)}},
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

func TestDecodeRefundReply(t *testing.T) {
	for _, tc := range []struct {
		reply any
		n     int
		ok    bool
	}{
		{int64(0), 2, true}, {int64(2), 2, true}, {int64(3), 2, false}, {int64(-1), 2, false},
		{"1", 2, false}, {[]any{int64(1)}, 2, false}, {nil, 1, false},
	} {
		if err := decodeRefund(tc.reply, tc.n); (err == nil) != tc.ok {
			t.Errorf("reply %#v for %d refunds: %v", tc.reply, tc.n, err)
		}
	}
}
