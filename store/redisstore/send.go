package redisstore

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluicehq/sluice"
)

// The sender is the one policy every script command goes through, on
// every topology: the circuit breaker of the endpoint it goes to, then its
// reachability (see reach), then the command, sent again after TRYAGAIN
// (see tryAgain) and, with the script's source, after NOSCRIPT (Redis ran
// neither), then its error classified and the breaker told. A topology
// says where a command goes and how it travels (see link).

// A route is where a command goes: the endpoint's name in events, logs and
// metrics, its circuit breaker and its reachability.
type route struct {
	addr    string
	breaker *breaker // nil when disabled
	reach   *reach   // nil when the topology's connections tell (see conn.Set)
	// live, when set, names the endpoint as it is now, for a name that
	// can change during a call (a Sentinel-managed primary's, as a dial
	// finds it); otherwise addr names it.
	live func() string
}

// name names the endpoint in events.
func (r *route) name() string {
	if r.live != nil {
		return r.live()
	}
	return r.addr
}

// A link is how a topology carries the sender's commands.
type link interface {
	// route returns where a command whose first key is key goes.
	route(ctx context.Context, key string) route
	// process sends one command.
	process(ctx context.Context, cmd redis.Cmder) error
	// pipeline returns a pipeline, or nil when the topology sends its
	// commands one by one.
	pipeline() redis.Pipeliner
	// failed reacts to a call that failed with err, or that its breaker
	// refused.
	failed(ctx context.Context, err error)
}

// sender sends script commands through a topology's link.
type sender struct {
	link    link
	events  sluice.StoreEvents
	reloads *atomic.Int64 // scripts re-sent after NOSCRIPT
}

// gate is one route in a send: its breaker asked once and told once, its
// reachability checked once.
type gate struct {
	route
	probe  bool
	err    error // the first failure among its commands
	unsent bool  // err: the endpoint was found unreachable; nothing was sent
	quiet  bool  // err says nothing about Redis (see result): the breaker is not told
}

// one sends a script command on its own and returns its reply or
// classified error.
func (sd *sender) one(ctx context.Context, op string, cmd []any) (any, error) {
	cmds := [1][]any{cmd}
	var replies [1]any
	var errs [1]error
	sd.send(ctx, op, cmds[:], false, replies[:], errs[:], nil)
	return replies[0], errs[0]
}

// many sends script commands in one pipeline (on Redis Cluster one per
// node, the nodes concurrently) and returns each command's reply or
// classified error, and whether it was sent again after NOSCRIPT (so
// after the commands that followed it in the first pipeline).
func (sd *sender) many(ctx context.Context, op string, cmds [][]any) ([]any, []error, []bool) {
	replies, errs, resent := make([]any, len(cmds)), make([]error, len(cmds)), make([]bool, len(cmds))
	sd.send(ctx, op, cmds, true, replies, errs, resent)
	return replies, errs, resent
}

// send sends cmds, each built by this package with its first key at
// cmd[3], through the breakers and reachability of their routes, and
// writes each one's reply and classified error into replies and errs, and
// into resent (when not nil) whether it was re-sent after NOSCRIPT. With
// piped they go in one pipeline, else one by one. A command whose route's
// breaker is open, or which was found unreachable, is not sent. Nothing
// else is re-sent: a script that may have run is never sent again.
func (sd *sender) send(ctx context.Context, op string, cmds [][]any, piped bool, replies []any, errs []error, resent []bool) {
	// A lone command's bookkeeping stays on the stack.
	var oneSent [1]scriptCmd
	var oneGate [1]gate
	var oneAt [1]int
	sent, gates, at := oneSent[:], oneGate[:0], oneAt[:]
	if len(cmds) != 1 {
		sent, gates, at = make([]scriptCmd, len(cmds)), make([]gate, 0, 4), make([]int, len(cmds))
	}
	for i, cmd := range cmds {
		at[i], gates = sd.gateOf(ctx, op, cmd[3].(string), gates)
		if g := &gates[at[i]]; g.err != nil && (g.unsent || errors.Is(g.err, sluice.ErrBreakerOpen)) {
			errs[i] = g.err
			continue
		}
		sent[i] = newScriptCmd(ctx, cmd...)
	}
	start := time.Now()
	sd.transmit(ctx, sent, nil, piped)
	sd.retry(ctx, cmds, sent, piped)
	sd.reload(ctx, cmds, sent, gates, at, piped, resent)
	for i := range sent {
		if sent[i].Cmd != nil {
			replies[i], errs[i] = result(op, sent[i], &gates[at[i]])
		}
	}
	for j := range gates {
		g := &gates[j]
		switch {
		case g.breaker == nil:
		case g.err == nil:
			g.breaker.answered(start)
		case !g.quiet && errors.Is(g.err, sluice.ErrTimeout) && readLate(ctx, start) && g.breaker.answeredSince(start):
			g.quiet = true // the process was slow, not Redis
		}
	}
	sd.settle(ctx, gates)
}

// readLate reports whether a call sent at start under ctx, whose deadline
// passed, ended so long after it that the lateness is this process's: it
// was not run in time to read what Redis answered (more than a quarter of
// the time the call had, and 2 ms, past its deadline; a Redis slow while
// the process is not makes the call end at its deadline, late only by the
// time to wake a goroutine).
func readLate(ctx context.Context, start time.Time) bool {
	deadline, ok := ctx.Deadline()
	return ok && time.Since(deadline) > max(deadline.Sub(start)/4, 2*time.Millisecond)
}

// gateOf returns the index in gates of the gate of key's route, adding it
// (its breaker asked, its reachability checked) if it is not there.
func (sd *sender) gateOf(ctx context.Context, op, key string, gates []gate) (int, []gate) {
	rt := sd.link.route(ctx, key)
	for j := range gates {
		if gates[j].addr == rt.addr {
			return j, gates
		}
	}
	g := gate{route: rt}
	if g.breaker != nil {
		ok, probe, retry := g.breaker.allow()
		if !ok {
			g.err = &sluice.StoreError{Op: op, Kind: sluice.ErrBreakerOpen, RetryAfter: retry}
		}
		g.probe = probe
	}
	if g.err == nil && g.reach != nil {
		if err := g.reach.check(op); err != nil {
			var se *sluice.StoreError
			if g.unsent, g.quiet = true, errors.As(err, &se); !g.quiet {
				err = classify(op, err)
			}
			g.err = err
		}
	}
	return len(gates), append(gates, g)
}

// transmit sends the commands of sent at the positions idx (nil: every
// command there is): in one pipeline when piped and the topology has one,
// else one by one.
func (sd *sender) transmit(ctx context.Context, sent []scriptCmd, idx []int, piped bool) {
	var pipe redis.Pipeliner
	if piped {
		pipe = sd.link.pipeline()
	}
	n := len(sent)
	if idx != nil {
		n = len(idx)
	}
	for j := range n {
		i := j
		if idx != nil {
			i = idx[j]
		}
		switch {
		case sent[i].Cmd == nil:
		case pipe != nil:
			_ = pipe.Process(ctx, sent[i])
		default:
			_ = sd.link.process(ctx, sent[i])
		}
	}
	if pipe != nil && pipe.Len() > 0 {
		_, _ = pipe.Exec(ctx)
	}
}

// retry sends again, up to 3 times, the commands Redis Cluster answered
// TRYAGAIN: Redis ran none of them (see tryAgain).
func (sd *sender) retry(ctx context.Context, cmds [][]any, sent []scriptCmd, piped bool) {
	for try := 0; ; try++ {
		var busy []int
		for i := range sent {
			if failedWith(sent[i], "TRYAGAIN") {
				busy = append(busy, i)
			}
		}
		if len(busy) == 0 || !tryAgain(ctx, sent[busy[0]].Err(), try) {
			return
		}
		for _, i := range busy {
			// A fresh slice: a hook may keep the first command.
			sent[i] = newScriptCmd(ctx, slices.Clone(cmds[i])...)
		}
		sd.transmit(ctx, sent, busy, piped)
	}
}

// reload sends again, with the script's source, the commands Redis
// answered NOSCRIPT (restart, failover, SCRIPT FLUSH): Redis did not run
// them, so this cannot apply them twice.
func (sd *sender) reload(ctx context.Context, cmds [][]any, sent []scriptCmd, gates []gate, at []int, piped bool, resent []bool) {
	var again []int
	for i := range sent {
		if !failedWith(sent[i], "NOSCRIPT") {
			continue
		}
		again = append(again, i)
		if resent != nil {
			resent[i] = true
		}
		sd.reloads.Add(1)
		if sd.events != nil {
			sd.events.ScriptReloaded(gates[at[i]].name())
		}
		cmd := append([]any{"eval", scriptOf(cmds[i]).src}, cmds[i][2:]...)
		sent[i] = newScriptCmd(ctx, cmd...)
	}
	if len(again) > 0 {
		sd.transmit(ctx, sent, again, piped)
	}
}

// failedWith reports whether c was sent and Redis answered it with an
// error reply starting with prefix. (HasErrorPrefix allocates: it is not
// asked about a command that succeeded.)
func failedWith(c scriptCmd, prefix string) bool {
	if c.Cmd == nil {
		return false
	}
	err := c.Err()
	return err != nil && redis.HasErrorPrefix(err, prefix)
}

// result returns a sent command's reply or classified error, and tells
// its gate's reachability what it found. An error classified already
// (the topology did not send the command, in a way that says nothing about
// Redis: see conn.ErrNoConn) makes the gate quiet.
func result(op string, c scriptCmd, g *gate) (any, error) {
	reply, err := c.Result()
	if err == nil {
		return reply, nil
	}
	if g.reach != nil {
		g.reach.observe(err)
	}
	var se *sluice.StoreError
	if errors.As(err, &se) {
		if g.err == nil {
			g.err, g.quiet = err, true
		}
		return nil, err
	}
	err = classify(op, err)
	if g.err == nil {
		g.err = err
	}
	return reply, err
}

// settle tells each gate's breaker how its commands went, and the link
// about the first failure.
func (sd *sender) settle(ctx context.Context, gates []gate) {
	told := false
	for j := range gates {
		g := &gates[j]
		if g.quiet { // suspect, or not sent: nothing learnt
			if g.probe {
				g.breaker.record(true, context.Canceled) // lets another call probe
			}
			continue
		}
		if g.breaker != nil && !errors.Is(g.err, sluice.ErrBreakerOpen) {
			g.breaker.record(g.probe, g.err)
		}
		if g.err != nil && !told {
			told = true
			sd.link.failed(ctx, g.err)
		}
	}
}

// scriptCmd is a script command that go-redis never sends a second time:
// not after a timeout, a reset or an EOF (the script may have run), whatever
// the client's MaxRetries says. go-redis's cluster client re-sends a
// command after a timeout up to MaxRedirects times even with retries off;
// a script re-sent that way consumes twice. It still follows MOVED and
// ASK, which Redis answers without running the script, and it still
// re-sends a command that never reached the connection.
type scriptCmd struct{ *redis.Cmd }

// NoRetry reports that the command must never be sent again once it may
// have reached Redis.
func (scriptCmd) NoRetry() bool { return true }

// tryAgain reports whether a command Redis Cluster answered TRYAGAIN (its
// keys' slot is being migrated, and the keys are split between the two
// nodes for a moment) should be sent again, after waiting for the
// migration: Redis did not run it. It waits 10 ms per try, up to 3 tries,
// never past ctx's end.
func tryAgain(ctx context.Context, err error, try int) bool {
	if try >= 3 || !redis.HasErrorPrefix(err, "TRYAGAIN") {
		return false
	}
	t := time.NewTimer(10 * time.Millisecond)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// newScriptCmd returns the script command of args.
func newScriptCmd(ctx context.Context, args ...any) scriptCmd {
	return scriptCmd{redis.NewCmd(ctx, args...)}
}
