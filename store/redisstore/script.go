package redisstore

import (
	"context"
	"crypto/sha1"
	_ "embed"
	"encoding/hex"
	"fmt"

	"github.com/redis/go-redis/v9"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/algo"
)

// The store builds each script command whole, as go-redis sends it
// ("evalsha", digest, key count, keys, arguments), and sends it with
// Process: one slice per call, where redis.Script would build two.

var (
	//go:embed take.lua
	takeSource string
	//go:embed refund.lua
	refundSource string
)

// A script is a Lua script the store runs by its SHA1 digest.
type script struct {
	src string
	sha any // the digest, boxed once rather than on every call
}

func newScript(src string) *script {
	sum := sha1.Sum([]byte(src))
	return &script{src: src, sha: hex.EncodeToString(sum[:])}
}

var (
	takeScript   = newScript(takeSource)
	refundScript = newScript(refundSource)
	// sources are the scripts to load ahead of their first use.
	sources = []string{takeSource, refundSource}
)

// scriptOf returns the script a command built by this package runs.
func scriptOf(cmd []any) *script {
	if cmd[1] == refundScript.sha {
		return refundScript
	}
	return takeScript
}

// loadScripts loads the store's scripts on c.
func loadScripts(ctx context.Context, c redis.Scripter) error {
	for _, src := range sources {
		if err := c.ScriptLoad(ctx, src).Err(); err != nil {
			return classify("redisstore: ready", err)
		}
	}
	return nil
}

// A request is one Take call's part of a take script call: its hits'
// Redis keys and the command deciding it alone, built on the caller's
// goroutine (a coalesced call may be sent after its caller gave up and
// reused its hits), and where its results go.
type request struct {
	hits []sluice.Hit
	out  []sluice.Result
	keys []string
	// cmd is the command deciding this request alone: "evalsha", the
	// digest, the key count, the keys, the clock ("": the server's), then
	// the hits' arguments (see args).
	cmd []any
	// replyLen is how many integers the script answers for the request in
	// the full form, and shortLen in the short form (0 when some hit is not
	// a plain token-bucket hit), counted when it is made: a coalesced batch
	// splits its reply after a member may have left, when hits is its
	// caller's again.
	replyLen, shortLen int
	// fullReset is the reset-after µs of a lone plain token-bucket hit
	// that found its bucket full (its cost's worth of emission
	// intervals), for a bare integer reply; counted when the request is
	// made, for the same reason.
	fullReset int64
}

// args returns the request's script arguments after the clock.
func (r *request) args() []any { return r.cmd[4+len(r.keys):] }

// setKey makes key the Redis key of the request's hit i, in its keys and
// in its command.
func (r *request) setKey(i int, key string) {
	r.keys[i] = key
	r.cmd[3+i] = key
}

// Mode bits of a hit's first script argument, after its algorithm (see
// take.lua).
const (
	modeShadow  = 4
	modeForce   = 8
	modePeek    = 16
	modePartial = 32
	modeLast    = 64 // the last hit of its request
	// modeCalendar marks a fixed-window hit of a calendar limit; four
	// boundaries of its calendar windows follow its arguments (see
	// calendarArgs).
	modeCalendar = 128
	// modePenalty marks a hit with a penalty (sluice.Hit.Block; a forced
	// one keeps the record but neither counts nor is blocked); its
	// block and after, and its limit's period, follow its arguments (see
	// penaltyArgs).
	modePenalty = 256
)

// oneHit holds the keys and command of a request of one hit, the commonest,
// in one allocation.
type oneHit struct {
	keys [1]string
	cmd  [9]any
}

// A decider builds the store's script commands, sends them through its
// sender and reads their replies.
type decider struct {
	keys *keyer
	send *sender
	heal *healer
	// where names the endpoint holding key, for heal.
	where func(key string) string
	// clock is the process's clock, which places the calendar boundaries
	// sent with a calendar hit (nil: the system clock); the script picks
	// among them by the server's clock.
	clock sluice.Clock
}

// newRequest returns the request deciding hits into out.
func (d *decider) newRequest(hits []sluice.Hit, out []sluice.Result) request {
	r := request{hits: hits, out: out, replyLen: replyLen(hits), shortLen: shortLen(hits)}
	if r.shortLen == 2 {
		r.fullReset = hits[0].Units() * hits[0].Limit.IntervalMicros()
	}
	if len(hits) == 1 {
		b := new(oneHit)
		r.keys, r.cmd = b.keys[:], b.cmd[:0]
	} else {
		r.keys, r.cmd = make([]string, len(hits)), make([]any, 0, 4+6*len(hits))
	}
	r.cmd = append(r.cmd, "evalsha", takeScript.sha, len(hits))
	for i := range hits {
		var boxed any
		r.keys[i], boxed = d.keys.named(&hits[i])
		r.cmd = append(r.cmd, boxed)
	}
	r.cmd = append(r.cmd, "") // the server's clock
	for i := range hits {
		h := &hits[i]
		mode := int(h.Algorithm)
		if h.Shadow {
			mode |= modeShadow
		}
		if h.Force {
			mode |= modeForce
		}
		if h.Peek {
			mode |= modePeek
		}
		if h.MinCost > 0 {
			mode |= modePartial
		}
		if i == len(hits)-1 {
			mode |= modeLast
		}
		if h.Limit.Calendar != sluice.NoCalendar {
			mode |= modeCalendar
		}
		if h.Block > 0 {
			mode |= modePenalty
		}
		r.cmd = append(r.cmd, mode, scriptPeriod(&h.Limit, h.Algorithm), h.Limit.Capacity(), h.Units())
		if h.MinCost > 0 {
			r.cmd = append(r.cmd, h.MinCost)
		}
		if mode&modeCalendar != 0 {
			r.cmd = d.calendarArgs(r.cmd, h.Limit)
		}
		if mode&modePenalty != 0 {
			r.cmd = penaltyArgs(r.cmd, h)
		}
	}
	return r
}

// scriptPeriod is the p argument of a hit of limit l under alg: the
// emission interval of a token bucket, the period of a window, and for a
// calendar limit the period its packed state is written with.
func scriptPeriod(l *sluice.Limit, alg sluice.Algorithm) int64 {
	switch {
	case alg == sluice.TokenBucket:
		return l.IntervalMicros()
	case l.Calendar != sluice.NoCalendar:
		return algo.CalendarPeriod
	}
	return l.PeriodMicros()
}

// takeCommand returns the command deciding reqs in one call of the take
// script, each atomically on its own, in order.
func takeCommand(reqs []*request) []any {
	if len(reqs) == 1 {
		return reqs[0].cmd
	}
	nkeys, nargs := 0, 0
	for _, r := range reqs {
		nkeys += len(r.keys)
		nargs += len(r.args())
	}
	cmd := make([]any, 0, 4+nkeys+nargs)
	cmd = append(cmd, "evalsha", takeScript.sha, nkeys)
	for _, r := range reqs {
		cmd = append(cmd, r.cmd[3:3+len(r.keys)]...) // the keys, boxed already
	}
	cmd = append(cmd, "") // the server's clock
	for _, r := range reqs {
		cmd = append(cmd, r.args()...)
	}
	return cmd
}

// refundCommand returns the command applying refunds in one call of the
// refund script (see refund.lua).
func (d *decider) refundCommand(refunds []sluice.Refund) []any {
	cmd := make([]any, 0, 4+6*len(refunds))
	cmd = append(cmd, "evalsha", refundScript.sha, len(refunds))
	for i := range refunds {
		cmd = append(cmd, d.keys.key(&refunds[i].Hit))
	}
	cmd = append(cmd, "") // the server's clock
	for i := range refunds {
		r := &refunds[i]
		cmd = append(cmd, int(r.Hit.Algorithm), scriptPeriod(&r.Hit.Limit, r.Hit.Algorithm), r.Amount(), r.Receipt.Mark, r.Receipt.Seq)
	}
	return cmd
}

// refreshCommand returns the command restarting the hold of concurrency
// slots in one call of the refund script (see refund.lua), and writes
// each slot's next mark into its receipt.
func (d *decider) refreshCommand(refreshes []sluice.SlotRefresh) []any {
	cmd := make([]any, 0, 4+6*len(refreshes))
	cmd = append(cmd, "evalsha", refundScript.sha, len(refreshes))
	for i := range refreshes {
		cmd = append(cmd, d.keys.key(&refreshes[i].Hit))
	}
	cmd = append(cmd, "") // the server's clock
	for i := range refreshes {
		r := &refreshes[i]
		next := r.NextMark()
		cmd = append(cmd, scriptRefresh, scriptPeriod(&r.Hit.Limit, r.Hit.Algorithm), next, r.Receipt.Mark, r.Receipt.Seq)
		r.Receipt.Mark = next
	}
	return cmd
}

// scriptRefresh is the refund script's algorithm argument that refreshes
// a concurrency slot.
const scriptRefresh = 4

// decodeRefund checks the refund script's reply for n refunds: how many
// changed their bucket, from 0 to n.
func decodeRefund(reply any, n int) error {
	if v, ok := reply.(int64); !ok || v < 0 || v > int64(n) {
		return badReply("refund", reply)
	}
	return nil
}

// decide decides reqs in one call of the take script through the sender,
// and writes each request's results into its out: the entry point for one
// batch of requests on one connection. Every batch is
// takeCommand(reqs) sent as it is, its reply read by finish (or, for a
// coalesced batch whose members may have left, by split and each member's
// decode). A key found holding something that is not a bucket's state was
// replaced by the script; split reports it (see heal).
func (d *decider) decide(ctx context.Context, reqs []*request) error {
	reply, err := d.send.one(ctx, "redisstore: take", takeCommand(reqs))
	if err != nil {
		return err
	}
	return d.finish(reply, reqs)
}

// finish writes each request's results from the reply to takeCommand(reqs).
func (d *decider) finish(reply any, reqs []*request) error {
	if mark, ok := reply.(int64); ok && len(reqs) == 1 {
		return reqs[0].decodeFull(mark)
	}
	var one [1][]any // a lone request's part, without an allocation
	parts, short, err := d.split(reply, reqs, one[:0])
	if err != nil {
		return err
	}
	for i, r := range reqs {
		if err := r.decode(parts[i], short); err != nil {
			return err
		}
	}
	return nil
}

// split checks the shape of a take script reply for reqs, reports the keys
// it replaced, and appends each request's part of it to parts; short
// tells the reply's form (see take.lua).
func (d *decider) split(reply any, reqs []*request, parts [][]any) (_ [][]any, short bool, _ error) {
	if mark, ok := reply.(int64); ok && len(reqs) == 1 && reqs[0].shortLen == 2 {
		// A lone hit that found its bucket full: its short form. Its hits
		// are not read: the caller may have left (see request).
		return append(parts, []any{reqs[0].fullReset, mark}), true, nil
	}
	vals, ok := reply.([]any)
	if !ok || len(vals) == 0 {
		return nil, false, badReply("take", reply)
	}
	healed, ok := vals[0].(int64)
	if healed == -1 {
		healed, short = 0, true
	}
	if !ok || healed < 0 || healed > int64(len(vals)-1) {
		return nil, false, badReply("take", reply)
	}
	marks, vals := vals[1:1+healed], vals[1+healed:]
	for _, r := range reqs {
		n := r.replyLen
		if short {
			n = r.shortLen
		}
		if len(vals) < n || n == 0 {
			return nil, false, badReply("take", reply)
		}
		parts, vals = append(parts, vals[:n]), vals[n:]
	}
	if len(vals) != 0 {
		return nil, false, badReply("take", reply)
	}
	for _, m := range marks {
		i, ok := m.(int64)
		if !ok || i < 1 {
			return nil, false, badReply("take", reply)
		}
		if key, ok := keyAt(reqs, int(i-1)); ok {
			d.heal.heal(key, d.where)
		} else {
			return nil, false, badReply("take", reply)
		}
	}
	return parts, short, nil
}

// keyAt returns the key of the i-th hit of reqs, counted across them.
func keyAt(reqs []*request, i int) (string, bool) {
	for _, r := range reqs {
		if i < len(r.keys) {
			return r.keys[i], true
		}
		i -= len(r.keys)
	}
	return "", false
}

// replyLen is how many integers the take script answers for hits: five per
// hit, and a sixth for a sliding log's.
func replyLen(hits []sluice.Hit) int {
	n := 5 * len(hits)
	for i := range hits {
		if hits[i].Algorithm == sluice.SlidingLog {
			n++
		}
	}
	return n
}

// shortLen is how many integers the take script answers for hits in the
// short form: two per hit when every hit is a plain token-bucket hit (not
// forced, a peek or partial), else 0: the script answers in the full form.
func shortLen(hits []sluice.Hit) int {
	for i := range hits {
		if h := &hits[i]; h.Algorithm != sluice.TokenBucket || h.Force || h.Peek || h.MinCost > 0 || h.Block > 0 {
			return 0
		}
	}
	return 2 * len(hits)
}

// maxExact bounds every integer in a take script reply: the script keeps
// its arithmetic below 2^53, where Lua's doubles are exact.
const maxExact = 1 << 53

// decode writes r's results from its part of a take script reply, in the
// short form when short (see decodeShort), else per hit a code (allowed,
// unsatisfiable, 4 × the units taken), remaining, reset-after and
// retry-after µs, the receipt's mark and, for a sliding log, its sequence
// number.
func (r *request) decode(vals []any, short bool) error {
	if short {
		return r.decodeShort(vals)
	}
	if len(vals) != r.replyLen {
		return badReply("take", vals)
	}
	var n [6]int64
	for i := range r.hits {
		h := &r.hits[i]
		w := 5
		if h.Algorithm == sluice.SlidingLog {
			w = 6
		}
		for j := range w {
			v, ok := vals[j].(int64)
			if !ok || v < 0 || v > maxExact {
				return badReply("take", vals)
			}
			n[j] = v
		}
		vals = vals[w:]
		code, taken := n[0], n[0]>>2
		if taken > h.Units() || taken > 0 && h.Force {
			return badReply("take", n)
		}
		out := &r.out[i]
		blocked := code == codeBlocked
		if blocked && h.Block <= 0 {
			return badReply("take", n)
		}
		*out = sluice.Result{
			Allowed:       code&1 == 1 && !blocked,
			Unsatisfiable: code&2 == 2 && !blocked,
			Blocked:       blocked,
			BlockStarted:  blocked && n[4] == 1,
			Limit:         h.Limit,
			Remaining:     n[1],
			ResetAfter:    algo.Micros(n[2]),
			RetryAfter:    algo.Micros(n[3]),
		}
		if h.Concurrency && !out.Allowed {
			out.RetryAfter = min(out.RetryAfter, sluice.ConcurrencyRetry)
		}
		if taken > 0 {
			out.Receipt = sluice.Receipt{Taken: taken, Mark: n[4]}
			if w == 6 {
				out.Receipt.Seq = n[5]
			}
		}
	}
	return nil
}

// decodeShort writes r's results from its part of a short-form reply: per
// hit, all plain token-bucket hits, reset-after µs and the mark of what it
// took (0: nothing). The rest follows from the hit, as take.lua says.
func (r *request) decodeShort(vals []any) error {
	if len(vals) != r.shortLen || len(vals) != 2*len(r.hits) {
		return badReply("take", vals)
	}
	for i := range r.hits {
		reset, ok1 := vals[2*i].(int64)
		mark, ok2 := vals[2*i+1].(int64)
		if !ok1 || !ok2 || reset < 0 || reset > maxExact || mark < 0 || mark > maxExact {
			return badReply("take", vals)
		}
		r.decodeHit(i, reset, mark)
	}
	return nil
}

// decodeFull writes the result of r, one plain token-bucket hit, from a
// bare integer reply: the hit found its bucket full and took its cost, and
// the reply is its mark (see take.lua). Its reset-after is its cost's
// worth of emission intervals.
func (r *request) decodeFull(mark int64) error {
	if len(r.hits) != 1 || r.shortLen != 2 || mark <= 0 || mark > maxExact {
		return badReply("take", mark)
	}
	r.decodeHit(0, r.fullReset, mark)
	return nil
}

// decodeHit writes the result of r's hit i, a plain token-bucket hit, from
// its reset-after µs and mark (0: it took nothing); the rest follows from
// the hit, as take.lua says.
func (r *request) decodeHit(i int, reset, mark int64) {
	h := &r.hits[i]
	c, p, limit := h.Units(), h.Limit.IntervalMicros(), h.Limit.Capacity()
	tau := limit * p
	out := &r.out[i]
	*out = sluice.Result{Limit: h.Limit, ResetAfter: algo.Micros(reset)}
	if tau > reset {
		out.Remaining = (tau - reset) / p
	}
	switch {
	case mark > 0:
		out.Allowed = true
		out.Receipt = sluice.Receipt{Taken: c, Mark: mark}
	case c > limit:
		out.Unsatisfiable = true
	case reset+c*p <= tau:
		out.Allowed = true
	default:
		out.RetryAfter = algo.Micros(reset + c*p - tau)
	}
}

// badReply reports a script reply of the wrong shape for op. The script
// ran, so the outcome is ambiguous.
func badReply(op string, reply any) error {
	return &sluice.StoreError{Op: "redisstore: " + op, Kind: sluice.ErrUnavailable, Ambiguous: true,
		Err: fmt.Errorf("unexpected script reply %T", reply)}
}
