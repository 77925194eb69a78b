package redisstore

import (
	"context"
	"crypto/sha1"
	_ "embed"
	"encoding/hex"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/algo"
)

// The store builds each script command whole, as go-redis sends it
// ("evalsha", digest, key count, keys, arguments), and sends it with
// Process: one slice per call, where redis.Script would build two.

//go:embed take.lua
var takeSource string

// takeSHA is take.lua's SHA1 digest, by which EVALSHA names it.
var takeSHA = func() string {
	sum := sha1.Sum([]byte(takeSource))
	return hex.EncodeToString(sum[:])
}()

// clockArg is the batch form's first argument: "" for the server clock,
// or the test clock.
func (s *Store) clockArg() string {
	if s.now != nil {
		return strconv.FormatInt(s.now(), 10)
	}
	return ""
}

// maxTBHits bounds the hits of a request in the token-bucket form: the
// script unpacks their keys onto Lua's stack.
const maxTBHits = 100

// tbForm reports whether a request of hits takes the script's token-bucket
// form (see take.lua), the most common request: every hit a token bucket
// that takes exactly its cost, none forced or a peek, and none shadow
// unless it is alone (a single hit's shadow
// flag changes nothing, as it cannot refuse the request for another).
func tbForm(hits []sluice.Hit) bool {
	if len(hits) == 0 || len(hits) > maxTBHits {
		return false
	}
	for i := range hits {
		if h := &hits[i]; h.Algorithm != sluice.TokenBucket || h.Force || h.Peek || h.MinCost > 0 || (h.Shadow && len(hits) > 1) {
			return false
		}
	}
	return true
}

// command returns the command deciding one request of hits on its own,
// and whether it takes the token-bucket form.
func (s *Store) command(hits []sluice.Hit) (cmd []any, tb bool) {
	if tbForm(hits) {
		return s.tbCommand(hits), true
	}
	keys, args := s.appendRequest(nil, nil, hits)
	return s.batchCommand(keys, [][]any{args}), false
}

// decodeAs fills out from the reply to a command of one request of hits,
// in the token-bucket form or not.
func decodeAs(tb bool, reply any, hits []sluice.Hit, out []sluice.Result) error {
	if tb {
		return decodeTB(reply, hits, out)
	}
	return decode(reply, hits, out)
}

// tbCommand returns the command deciding hits in the token-bucket form:
// three arguments per hit, and the test clock when there is one.
func (s *Store) tbCommand(hits []sluice.Hit) []any {
	if len(hits) == 1 { // the commonest call, in one allocation
		h := &hits[0]
		if s.now == nil {
			return []any{"evalsha", s.sha, 1, s.keys.key(h), h.Limit.IntervalMicros(), h.Limit.Capacity(), h.Units()}
		}
		return []any{"evalsha", s.sha, 1, s.keys.key(h), h.Limit.IntervalMicros(), h.Limit.Capacity(), h.Units(), s.now()}
	}
	cmd := make([]any, 0, 4+4*len(hits))
	cmd = append(cmd, "evalsha", s.sha, len(hits))
	for i := range hits {
		cmd = append(cmd, s.keys.key(&hits[i]))
	}
	for i := range hits {
		h := &hits[i]
		cmd = append(cmd, h.Limit.IntervalMicros(), h.Limit.Capacity(), h.Units())
	}
	return s.appendClock(cmd)
}

// tbCommandOf is tbCommand for a request given by its keys and its
// arguments from appendRequest.
func (s *Store) tbCommandOf(keys []string, args []any) []any {
	cmd := make([]any, 0, 4+4*len(keys))
	cmd = append(cmd, "evalsha", s.sha, len(keys))
	for _, k := range keys {
		cmd = append(cmd, k)
	}
	for a := args; len(a) >= hitArgs; a = a[hitArgs:] {
		cmd = append(cmd, a[3], a[2], a[4]) // interval, capacity, cost
	}
	return s.appendClock(cmd)
}

// appendClock appends the token-bucket form's last argument, the test
// clock, when there is one.
func (s *Store) appendClock(cmd []any) []any {
	if s.now != nil {
		cmd = append(cmd, s.now())
	}
	return cmd
}

// batchCommand returns the command deciding requests in the batch form,
// each given by its hits' arguments from appendRequest; keys are the
// buckets of all their hits, in order.
func (s *Store) batchCommand(keys []string, requests [][]any) []any {
	cmd := make([]any, 0, 5+len(keys)*(1+hitArgs)+len(requests))
	cmd = append(cmd, "evalsha", s.sha, len(keys))
	for _, k := range keys {
		cmd = append(cmd, k)
	}
	cmd = append(cmd, s.clockArg(), len(requests))
	for _, a := range requests {
		cmd = append(cmd, len(a)/hitArgs)
	}
	for _, a := range requests {
		cmd = append(cmd, a...)
	}
	return cmd
}

// hitArgs is the number of script arguments per hit; flagShadow,
// flagForce and flagPeek are the bits of its flags.
const (
	hitArgs    = 7
	flagShadow = 1
	flagForce  = 2
	flagPeek   = 4
)

// appendRequest appends the keys and script arguments of one request's
// hits (hitArgs per hit) to keys and args.
func (s *Store) appendRequest(keys []string, args []any, hits []sluice.Hit) ([]string, []any) {
	for i := range hits {
		h := &hits[i]
		keys = append(keys, s.keys.key(h))
		flags := 0
		if h.Shadow {
			flags |= flagShadow
		}
		if h.Force {
			flags |= flagForce
		}
		if h.Peek {
			flags |= flagPeek
		}
		args = append(args, int(h.Algorithm), h.Limit.PeriodMicros(), h.Limit.Capacity(), h.Limit.IntervalMicros(), h.Units(), flags, h.MinCost)
	}
	return keys, args
}

// run sends a script command and returns the reply. If Redis lost the
// script (NOSCRIPT: restart, failover, SCRIPT FLUSH) it sends the source
// once: Redis did not run the script, so this cannot consume twice.
func (s *Store) run(ctx context.Context, cmd []any) (any, error) {
	c := redis.NewCmd(ctx, cmd...)
	_ = s.process(ctx, c)
	reply, err := c.Result()
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		s.reloads.Add(1)
		if s.events != nil {
			s.events.ScriptReloaded(s.endpoint)
		}
		// A fresh slice: a hook may keep the first command.
		cmd = append([]any{"eval", takeSource}, cmd[2:]...)
		c = redis.NewCmd(ctx, cmd...)
		_ = s.process(ctx, c)
		reply, err = c.Result()
	}
	return reply, err
}

// decodeTB fills out from the reply of the script's token-bucket form for
// hits: per hit, the bucket's reset-after before its decision, negative
// (minus one) if it did not pass; the request was admitted if every hit
// passed.
func decodeTB(reply any, hits []sluice.Hit, out []sluice.Result) error {
	if len(hits) == 1 {
		v, ok := reply.(int64)
		if !ok {
			return badReply(reply)
		}
		return decodeTBHit(v, v >= 0, &hits[0], &out[0])
	}
	vals, ok := reply.([]any)
	if !ok || len(vals) != len(hits) {
		return badReply(reply)
	}
	admitted := true
	for _, v := range vals {
		n, ok := v.(int64)
		if !ok {
			return badReply(reply)
		}
		admitted = admitted && n >= 0
	}
	for i, v := range vals {
		if err := decodeTBHit(v.(int64), admitted, &hits[i], &out[i]); err != nil {
			return err
		}
	}
	return nil
}

// decodeTBHit fills r for hit h from its integer v in the token-bucket
// form's reply, in a request admitted or not. algo.TokenBucket works out
// the rest at time 0, which gives what the script would have at its own
// time, as a token bucket's decision depends on the arrival time relative
// to now alone.
func decodeTBHit(v int64, admitted bool, h *sluice.Hit, r *sluice.Result) error {
	passed, reset := v >= 0, v
	if !passed {
		reset = -1 - v
	}
	o, _ := algo.TokenBucket(0, reset, h.Limit.IntervalMicros(), h.Limit.Capacity(), h.Units(), false)
	if o.Allowed != passed {
		// Go and Lua disagree: a bug, or a script of another version.
		return &sluice.StoreError{Op: "redisstore: take", Kind: sluice.ErrUnavailable, Ambiguous: true,
			Err: fmt.Errorf("script reply %d disagrees with the decision it implies", v)}
	}
	o.Result(r, h.Limit, admitted) // admitted: every hit passed and consumed
	return nil
}

// decode fills out from the script's reply: five integers per hit.
func decode(reply any, hits []sluice.Hit, out []sluice.Result) error {
	vals, ok := reply.([]any)
	if !ok || len(vals) != 5*len(hits) {
		return badReply(reply)
	}
	for i := range hits {
		var n [5]int64
		for j := range n {
			v, ok := vals[5*i+j].(int64)
			if !ok {
				return badReply(reply)
			}
			n[j] = v
		}
		out[i] = sluice.Result{
			Allowed:       n[0] == 1,
			Unsatisfiable: n[1] == 1,
			Limit:         hits[i].Limit,
			Remaining:     n[2],
			ResetAfter:    algo.Micros(n[3]),
			RetryAfter:    algo.Micros(n[4]),
		}
	}
	return nil
}

// badReply reports a script reply of the wrong shape. The script ran, so
// the outcome is ambiguous.
func badReply(reply any) error {
	return &sluice.StoreError{Op: "redisstore: take", Kind: sluice.ErrUnavailable, Ambiguous: true,
		Err: fmt.Errorf("unexpected script reply %T", reply)}
}
