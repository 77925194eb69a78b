package redisstore_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/store/redisstore"
	"github.com/sluicehq/sluice/store/storetest"
)

// scriptCalls is a go-redis hook counting script commands.
type scriptCalls struct{ n atomic.Int64 }

func (*scriptCalls) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *scriptCalls) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if n := cmd.Name(); n == "evalsha" || n == "eval" {
			c.n.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (*scriptCalls) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestRefundBatchIsOneScriptCall gives back takes of every algorithm in one
// Refund: one script call, and every bucket is full again. After Redis
// lost its scripts, Refund reloads the refund script like Take does.
func TestRefundBatchIsOneScriptCall(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, srv.Addr)
	calls := &scriptCalls{}
	c.AddHook(calls)
	clock := storetest.NewClock(time.Now())
	s := newStoreWith(t, c, clock, redisstore.Config{})
	redisstore.WaitStartupCheck(s) // it loads the scripts
	waitConnsReady(t, s)
	ctx := context.Background()
	for _, flush := range []bool{false, true} {
		var hits []sluice.Hit
		for _, alg := range healAlgorithms {
			hits = append(hits, sluice.Hit{Key: t.Name() + alg.String(), Limit: sluice.PerMinute(10), Algorithm: alg, Cost: 4})
		}
		out := make([]sluice.Result, len(hits))
		if err := s.Take(ctx, hits, out); err != nil {
			t.Fatal(err)
		}
		refunds := make([]sluice.Refund, len(hits))
		for i := range hits {
			refunds[i] = sluice.Refund{Hit: hits[i], Receipt: out[i].Receipt}
		}
		if flush {
			if err := c.ScriptFlush(ctx).Err(); err != nil {
				t.Fatal(err)
			}
		}
		reloads := s.ScriptReloads()
		before := calls.n.Load()
		if err := s.Refund(ctx, refunds); err != nil {
			t.Fatal(err)
		}
		want := int64(1)
		if flush {
			want = 2 // EVALSHA answered NOSCRIPT, then EVAL
			if s.ScriptReloads() != reloads+1 {
				t.Fatalf("script reloads %d, want %d", s.ScriptReloads(), reloads+1)
			}
		}
		if got := calls.n.Load() - before; got != want {
			t.Fatalf("flush %v: %d script calls for %d refunds, want %d", flush, got, len(refunds), want)
		}
		for _, h := range hits {
			if got := peek(t, s, h).Remaining; got != 10 {
				t.Fatalf("flush %v: %v after the refund: %d remaining, want 10", flush, h.Algorithm, got)
			}
		}
		if err := s.Reset(ctx, hits); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRefundOfMissingOrCorruptBucketsChangesNothing: a refund whose bucket
// expired, or holds something else, gives nothing back and fails nothing.
func TestRefundOfMissingOrCorruptBucketsChangesNothing(t *testing.T) {
	t.Parallel() // its own redis-server; no package state, no timing
	srv := redistest.Start(t)
	c := newClient(t, srv.Addr)
	s := newStoreWith(t, c, nil, redisstore.Config{StartupCheckTimeout: -1})
	ctx := context.Background()
	for _, alg := range healAlgorithms {
		h := sluice.Hit{Key: t.Name() + alg.String(), Limit: sluice.PerMinute(10), Algorithm: alg, Cost: 2}
		out := make([]sluice.Result, 1)
		if err := s.Take(ctx, []sluice.Hit{h}, out); err != nil {
			t.Fatal(err)
		}
		r := []sluice.Refund{{Hit: h, Receipt: out[0].Receipt}}
		if err := c.Del(ctx, redisstore.KeyOf(s, h)).Err(); err != nil {
			t.Fatal(err)
		}
		if err := s.Refund(ctx, r); err != nil {
			t.Fatalf("%v, missing: %v", alg, err)
		}
		if err := c.RPush(ctx, redisstore.KeyOf(s, h), "x").Err(); err != nil {
			t.Fatal(err)
		}
		if err := s.Refund(ctx, r); err != nil {
			t.Fatalf("%v, a list: %v", alg, err)
		}
		if typ := c.Type(ctx, redisstore.KeyOf(s, h)).Val(); typ != "list" {
			t.Fatalf("%v: a refund changed a foreign key into a %s", alg, typ)
		}
	}
}

// TestRefundWithDoneContextSendsNothing: a refund whose context is done
// fails at once, unambiguously, without a call.
func TestRefundWithDoneContextSendsNothing(t *testing.T) {
	t.Parallel() // its own redis-server; no package state, no timing
	srv := redistest.Start(t)
	c := newClient(t, srv.Addr)
	calls := &scriptCalls{}
	c.AddHook(calls)
	s := newStoreWith(t, c, nil, redisstore.Config{StartupCheckTimeout: -1})
	h := sluice.Hit{Key: "k", Limit: sluice.PerMinute(10), Cost: 1}
	out := make([]sluice.Result, 1)
	if err := s.Take(context.Background(), []sluice.Hit{h}, out); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	before := calls.n.Load()
	err := s.Refund(ctx, []sluice.Refund{{Hit: h, Receipt: out[0].Receipt}})
	var se *sluice.StoreError
	if !errors.As(err, &se) || se.Ambiguous || se.Op != "redisstore: refund" {
		t.Fatalf("err = %v, want an unambiguous refund error", err)
	}
	if calls.n.Load() != before {
		t.Fatal("a refund with a done context was sent")
	}
}
