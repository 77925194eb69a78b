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

// shortForm reports whether a request of hits takes the script's short
// form (see take.lua): one unforced token-bucket hit, the most common
// request. A single hit's shadow flag changes nothing, as it cannot refuse
// the request for another.
func shortForm(hits []sluice.Hit) bool {
	return len(hits) == 1 && hits[0].Algorithm == sluice.TokenBucket && !hits[0].Force
}

// shortCommand returns the command deciding a hit of cost on the bucket at
// key, of capacity with emission interval µs, in the short form: three
// arguments, and the test clock when there is one.
func (s *Store) shortCommand(key string, interval, capacity, cost any) []any {
	if s.now != nil {
		return []any{"evalsha", s.sha, 1, key, interval, capacity, cost, s.now()}
	}
	return []any{"evalsha", s.sha, 1, key, interval, capacity, cost}
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

// hitArgs is the number of script arguments per hit; flagShadow and
// flagForce are the bits of its last, the flags.
const (
	hitArgs    = 6
	flagShadow = 1
	flagForce  = 2
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
		args = append(args, int(h.Algorithm), h.Limit.PeriodMicros(), h.Limit.Capacity(), h.Limit.IntervalMicros(), h.Cost, flags)
	}
	return keys, args
}

// shortCommandOf returns the short-form command of a request whose one hit
// has the bucket key and the arguments a from appendRequest.
func (s *Store) shortCommandOf(key string, a []any) []any {
	return s.shortCommand(key, a[3], a[2], a[4])
}

// run sends a script command and returns the reply. If Redis lost the
// script (NOSCRIPT: restart, failover, SCRIPT FLUSH) it sends the source
// once: Redis did not run the script, so this cannot consume twice.
func (s *Store) run(ctx context.Context, cmd []any) (any, error) {
	c := redis.NewCmd(ctx, cmd...)
	_ = s.client.Process(ctx, c)
	reply, err := c.Result()
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		s.reloads.Add(1)
		if s.events != nil {
			s.events.ScriptReloaded(s.endpoint)
		}
		cmd[0], cmd[1] = "eval", takeSource
		c = redis.NewCmd(ctx, cmd...)
		_ = s.client.Process(ctx, c)
		reply, err = c.Result()
	}
	return reply, err
}

// decodeShort fills r from the reply of the script's short form for hit h:
// the bucket's reset-after before the decision, negative (minus one) if the
// hit did not pass. algo.TokenBucket works out the rest at time 0, which
// gives what the script would have at its own time, since a token bucket's
// decision depends on the arrival time relative to now alone.
func decodeShort(reply any, h *sluice.Hit, r *sluice.Result) error {
	v, ok := reply.(int64)
	if !ok {
		return badReply(reply)
	}
	passed := v >= 0
	if !passed {
		v = -1 - v
	}
	o, _ := algo.TokenBucket(0, v, h.Limit.IntervalMicros(), h.Limit.Capacity(), h.Cost, false)
	if o.Allowed != passed {
		// Go and Lua disagree: a bug, or a script of another version.
		return &sluice.StoreError{Op: "redisstore: take", Kind: sluice.ErrUnavailable, Ambiguous: true,
			Err: fmt.Errorf("script reply %d disagrees with the decision it implies", reply)}
	}
	o.Result(r, h.Limit, passed)
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
