package redisstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
	"github.com/sluicehq/sluice"
)

// On Redis Cluster the atomic unit is the hash slot: Redis refuses a script
// whose keys lie in two slots, even on one node. So the store groups a
// request's hits by slot and decides each group with one script call, the
// calls for all the groups in one cluster pipeline (go-redis sends it as
// one pipeline per node, the nodes concurrently). When one group refuses
// the request, what the others took is given back by exact refunds before
// Take returns, and their hits decided again, behind the refunds in one
// more round trip, as a request that cannot be admitted, so the caller sees
// what a single node would have answered.
//
// A coalescing store has a coalescer per slot (a batch is one script call,
// so one slot's): a single-slot request goes through its slot's; a
// cross-slot request sends each group through its slot's, the groups that
// find a free lane together in one cluster pipeline, the others queued in
// their slots' batches, all side by side (see takeCoalesced). Refunds are
// not coalesced.
//
// When some groups fail (CLUSTERDOWN, TRYAGAIN after its retries, a dead
// master, its breaker open) and the others are decided, Take gives back
// what the decided groups took and fails as a whole; TakePartial instead
// keeps the decided groups' decisions and names the failed hits in a
// *sluice.PartialError (see partial.go).

// cluster is the store's state for a Redis Cluster client: each master's
// circuit breaker and reachability, and the coalescers of the slots.
type cluster struct {
	s *Store
	c *redis.ClusterClient
	// breakerCfg makes each master's breaker; disabled leaves them nil.
	breakerCfg BreakerConfig
	masters    sync.Map // master address → *master
	hooked     sync.Map // node client → struct{}: its dials are watched
	// coalescers, when the store coalesces, hold a coalescer per slot,
	// made on first use: a batch is one script call, so one slot.
	coalescers     *[hashSlots]atomic.Pointer[coalescer]
	refundFailures atomic.Int64
}

func newCluster(s *Store, c *redis.ClusterClient, cfg Config) *cluster {
	cl := &cluster{s: s, c: c, breakerCfg: cfg.Breaker}
	if cfg.Coalesce > 1 {
		cl.coalescers = new([hashSlots]atomic.Pointer[coalescer])
	}
	return cl
}

// coalescer returns slot's coalescer.
func (cl *cluster) coalescer(slot int) *coalescer {
	p := &cl.coalescers[slot]
	if c := p.Load(); c != nil {
		return c
	}
	c := newCoalescer(cl.s, nil, cl.s.coalesce.max, cl.s.coalesce.lanes)
	if p.CompareAndSwap(nil, c) {
		return c
	}
	return p.Load()
}

// master is one Redis Cluster master the store sends commands to, named
// by its address in events, logs and metrics: its circuit breaker and
// whether it can be reached (see reach).
type master struct {
	addr    string
	breaker *breaker // nil when disabled
	reach   *reach
	hooked  atomic.Pointer[redis.Client] // the last node client whose dials reach watches
}

// masterFor returns the master serving key's slot, as the client's slot
// map has it (no I/O once the map is loaded). While the map cannot be read
// (no node answers), the calls share one master named after the client's
// seed addresses, which is never marked down.
func (cl *cluster) masterFor(ctx context.Context, key string) *master {
	node, err := cl.c.MasterForKey(ctx, key)
	var addr string
	if err == nil {
		addr = node.Options().Addr
	} else {
		node = nil
		addr = strings.Join(cl.c.Options().Addrs, ",")
	}
	if m, ok := cl.masters.Load(addr); ok {
		m := m.(*master)
		cl.watchDials(node, m)
		return m
	}
	m := &master{addr: addr, breaker: newBreaker(addr, cl.breakerCfg, cl.s.events), reach: newReach(addr, node, cl.s.closed.Load)}
	if v, loaded := cl.masters.LoadOrStore(addr, m); loaded {
		m = v.(*master)
	}
	cl.watchDials(node, m)
	return m
}

// watchDials makes m's reachability learn from every dial of node, its
// client, once per client (go-redis makes a new one for a node it forgot
// and met again).
func (cl *cluster) watchDials(node *redis.Client, m *master) {
	if node == nil || m.reach.dial == nil || m.hooked.Load() == node {
		return
	}
	m.hooked.Store(node)
	if _, done := cl.hooked.LoadOrStore(node, struct{}{}); !done {
		node.AddHook(m.reach)
	}
}

// breakerFor returns the circuit breaker of the master serving key's slot
// (see masterFor), or nil when breakers are disabled.
func (cl *cluster) breakerFor(ctx context.Context, key string) *breaker {
	return cl.masterFor(ctx, key).breaker
}

// breakerState returns the least healthy state of the masters' breakers.
func (cl *cluster) breakerState() sluice.BreakerState {
	worst := sluice.BreakerClosed
	cl.masters.Range(func(_, m any) bool {
		b := m.(*master).breaker
		if b == nil {
			return true
		}
		switch b.State() {
		case sluice.BreakerOpen:
			worst = sluice.BreakerOpen
			return false
		case sluice.BreakerHalfOpen:
			worst = sluice.BreakerHalfOpen
		}
		return true
	})
	return worst
}

// failed reacts to a failed call: after a failure a breaker counts (a dial
// error, a timeout, CLUSTERDOWN) or a refusal by an open breaker, the slot
// map is reloaded (go-redis reloads at most one at a time, then waits
// 200 ms before the next), so the slots of a master that died move to its
// promoted replica about as soon as the cluster promotes it, rather than at
// the next periodic reload.
func (cl *cluster) failed(ctx context.Context, err error) {
	if countsAsFailure(err) || errors.Is(err, sluice.ErrBreakerOpen) {
		cl.c.ReloadState(ctx)
	}
}

// take decides one request's hits: one script call when they share a slot,
// otherwise one per slot in one pipeline, with refunds when a slot refuses.
func (cl *cluster) take(ctx context.Context, hits []sluice.Hit, out []sluice.Result) error {
	return cl.takeWith(ctx, hits, out, false)
}

// takeWith is take; partial lets a request whose slots failed only in
// part keep the decisions of the others (see Store.TakePartial).
func (cl *cluster) takeWith(ctx context.Context, hits []sluice.Hit, out []sluice.Result, partial bool) error {
	s := cl.s
	r := s.newRequest(hits, out)
	slot := slotOf(r.keys[0])
	single := true
	for _, k := range r.keys[1:] {
		if slotOf(k) != slot {
			single = false
			break
		}
	}
	if single {
		if cl.coalescers != nil {
			return cl.coalescer(slot).take(ctx, hits, out)
		}
		return s.decide(ctx, []*request{&r})
	}
	return cl.takeSlots(ctx, r.keys, hits, out, partial)
}

// slotGroup is the part of a request whose hits share a slot.
type slotGroup struct {
	idx  []int // the hits' positions in the request
	hits []sluice.Hit
	out  []sluice.Result
	req  request
}

// groupBySlot splits a request's hits, whose Redis keys are keys, by slot,
// in the order their slots first appear.
func (s *Store) groupBySlot(keys []string, hits []sluice.Hit) []*slotGroup {
	var groups []*slotGroup
	bySlot := make(map[int]*slotGroup, 4)
	for i, k := range keys {
		slot := slotOf(k)
		g := bySlot[slot]
		if g == nil {
			g = &slotGroup{}
			bySlot[slot] = g
			groups = append(groups, g)
		}
		g.idx = append(g.idx, i)
		g.hits = append(g.hits, hits[i])
	}
	for _, g := range groups {
		g.out = make([]sluice.Result, len(g.hits))
		g.req = s.newRequest(g.hits, g.out)
	}
	return groups
}

// takeSlots decides a request whose hits lie in several slots. With
// partial, failed slots fail only their hits (see partialFailure).
func (cl *cluster) takeSlots(ctx context.Context, keys []string, hits []sluice.Hit, out []sluice.Result, partial bool) error {
	groups := cl.s.groupBySlot(keys, hits)
	var errs []error
	if cl.coalescers != nil {
		errs = cl.takeCoalesced(ctx, groups)
	} else {
		errs = cl.takeGroups(ctx, groups)
	}
	var failure error
	for i, g := range groups {
		if errs[i] != nil {
			if failure == nil || sluice.IsAmbiguous(errs[i]) && !sluice.IsAmbiguous(failure) {
				failure = errs[i]
			}
			continue
		}
		for j, at := range g.idx {
			out[at] = g.out[j]
		}
	}
	if failure != nil && partial {
		if err := cl.partialFailure(ctx, groups, errs, failure, hits, out); err != nil {
			return err
		}
	}
	if failure != nil {
		// The request is undecided: give back what the decided slots took.
		var refunds []sluice.Refund
		for i, g := range groups {
			if errs[i] == nil {
				refunds = appendRefunds(refunds, g.hits, g.out)
			}
		}
		cl.refundQuietly(ctx, refunds)
		return failure
	}
	if sluice.Admitted(hits, out) {
		return nil
	}
	cl.giveBack(ctx, groups, hits, out)
	return nil
}

// takeGroups decides groups, one script call per group in one cluster
// pipeline, and returns each group's error.
func (cl *cluster) takeGroups(ctx context.Context, groups []*slotGroup) []error {
	cmds := make([][]any, len(groups))
	for i, g := range groups {
		cmds[i] = takeCommand([]*request{&g.req})
	}
	replies, errs := cl.runMany(ctx, "redisstore: take", cmds)
	for i, g := range groups {
		if errs[i] == nil {
			errs[i] = cl.s.finish(replies[i], []*request{&g.req})
		}
	}
	return errs
}

// takeCoalesced decides groups, each through its slot's coalescer, and
// returns each group's error. A group whose slot has a free lane takes it
// and is sent at once, with the other such groups, in one cluster pipeline
// (one pipeline per node, the nodes concurrently), as without coalescing;
// a group whose slot has every lane busy queues there and joins that
// slot's next batch, decided atomically on its own as any member is. The
// pipeline and the batches run side by side: the request takes one round
// of wall time, or the time its slowest slot's queue takes.
func (cl *cluster) takeCoalesced(ctx context.Context, groups []*slotGroup) []error {
	errs := make([]error, len(groups))
	var (
		now     []*slotGroup // sent at once, on lanes of their slots
		nowAt   []int
		lanes   []*coalescer
		waiters []*waiter // queued, by group; nil for the others
	)
	for i, g := range groups {
		c := cl.coalescer(slotOf(g.req.keys[0]))
		if !c.claim() {
			w := newWaiter(ctx, g.req)
			if !c.enqueue(w) {
				if waiters == nil {
					waiters = make([]*waiter, len(groups))
				}
				waiters[i] = w
				continue
			}
		}
		now, nowAt, lanes = append(now, g), append(nowAt, i), append(lanes, c)
	}
	if len(now) > 0 {
		for j, err := range cl.takeOnLanes(ctx, now, lanes) {
			errs[nowAt[j]] = err
		}
	}
	for i, w := range waiters {
		if w != nil {
			errs[i] = w.wait()
		}
	}
	return errs
}

// takeOnLanes decides groups, each on a lane claimed for it in lanes, in
// one cluster pipeline, returns each group's error, and frees the lanes,
// even if the client panics (a lane kept would queue every later call of
// its slot).
func (cl *cluster) takeOnLanes(ctx context.Context, groups []*slotGroup, lanes []*coalescer) []error {
	defer func() {
		for _, c := range lanes {
			c.handOff()
		}
	}()
	start := lanes[0].clock()
	errs := cl.takeGroups(ctx, groups)
	took := lanes[0].clock().Sub(start)
	for j, err := range errs {
		if err == nil {
			lanes[j].observe(took)
		}
	}
	return errs
}

// appendRefunds appends to refunds one refund per hit of hits that took
// something, by its result in out.
func appendRefunds(refunds []sluice.Refund, hits []sluice.Hit, out []sluice.Result) []sluice.Refund {
	for j := range hits {
		if rc := out[j].Receipt; rc.Taken > 0 && !hits[j].Force {
			refunds = append(refunds, sluice.Refund{Hit: hits[j], Receipt: rc})
		}
	}
	return refunds
}

// giveBack undoes a refused request's takes in the slots that admitted
// their part: per such slot, one refund script call and, behind it in the
// same pipeline, the slot's hits decided again in a request that cannot be
// admitted (an extra hit in the slot whose cost exceeds its capacity), so
// that they consume nothing and report what a single node reports for a
// refused request: a hit that passed tells what is left without its
// consumption, a later hit on the same bucket sees the earlier ones'. A
// refund is never retried; a failed one is counted and logged, and its
// hits keep their takes' results without the receipts.
func (cl *cluster) giveBack(ctx context.Context, groups []*slotGroup, hits []sluice.Hit, out []sluice.Result) {
	s := cl.s
	type undo struct {
		g       *slotGroup
		refunds []sluice.Refund
		again   request // the slot's hits and the refusing hit
	}
	var undos []*undo
	var cmds [][]any
	for _, g := range groups {
		u := &undo{g: g}
		for j := len(g.hits) - 1; j >= 0; j-- { // the last take first
			if rc := g.out[j].Receipt; rc.Taken > 0 && !g.hits[j].Force {
				u.refunds = append(u.refunds, sluice.Refund{Hit: g.hits[j], Receipt: rc})
			}
		}
		if len(u.refunds) == 0 {
			continue
		}
		again := append(slices.Clone(g.hits), refuser)
		u.again = s.newRequest(again, make([]sluice.Result, len(again)))
		// The refusing hit's key shares the slot's hash tag; it is never
		// written, as its request is never admitted.
		u.again.setKey(len(again)-1, u.again.keys[0]+":refuse")
		undos = append(undos, u)
		cmds = append(cmds, s.refundCommand(u.refunds), takeCommand([]*request{&u.again}))
	}
	if len(cmds) == 0 {
		return
	}
	replies, errs, resent := cl.runManyReloading(ctx, "redisstore: refund", cmds)
	var stale []int // decisions that ran before their refund was re-sent
	for i := range undos {
		if resent[2*i] && errs[2*i] == nil {
			stale = append(stale, i)
		}
	}
	if len(stale) > 0 {
		again := make([][]any, len(stale))
		for j, i := range stale {
			again[j] = cmds[2*i+1]
		}
		r, e := cl.runMany(ctx, "redisstore: refund", again)
		for j, i := range stale {
			replies[2*i+1], errs[2*i+1] = r[j], e[j]
		}
	}
	for i, u := range undos {
		rerr, derr := errs[2*i], errs[2*i+1]
		if rerr == nil {
			rerr = decodeRefund(replies[2*i], len(u.refunds))
		}
		for _, at := range u.g.idx {
			out[at].Receipt = sluice.Receipt{}
		}
		if rerr != nil {
			cl.refundFailed(ctx, rerr, u.refunds)
			continue
		}
		if derr == nil {
			derr = s.finish(replies[2*i+1], []*request{&u.again})
		}
		if derr != nil {
			continue // the takes' results stand, without receipts
		}
		for j, at := range u.g.idx {
			r := u.again.out[j]
			r.Limit, r.Receipt = hits[at].Limit, sluice.Receipt{}
			out[at] = r
		}
	}
}

// refuser is a hit that can never pass: it makes a request that carries it
// consume nothing.
var refuser = sluice.Hit{Key: "refuse", Limit: sluice.PerHour(1), Cost: 2}

// refundQuietly gives back refunds, grouped by slot, and counts and logs
// what fails.
func (cl *cluster) refundQuietly(ctx context.Context, refunds []sluice.Refund) {
	if len(refunds) == 0 {
		return
	}
	groups := cl.s.groupRefunds(refunds)
	cmds := make([][]any, len(groups))
	for i, g := range groups {
		cmds[i] = cl.s.refundCommand(g)
	}
	replies, errs := cl.runMany(ctx, "redisstore: refund", cmds)
	for i, g := range groups {
		err := errs[i]
		if err == nil {
			err = decodeRefund(replies[i], len(g))
		}
		if err != nil {
			cl.refundFailed(ctx, err, g)
		}
	}
}

// refundFailed counts and logs a refund that failed. It is not retried:
// a retry can give back twice. It loses at most what it was for.
func (cl *cluster) refundFailed(ctx context.Context, err error, refunds []sluice.Refund) {
	var units int64
	for _, r := range refunds {
		units += r.Amount()
	}
	cl.refundFailures.Add(1)
	cl.s.log.LogAttrs(ctx, slog.LevelWarn, "redisstore: a refund of a refused cross-slot request failed; its units stay consumed until their buckets refill",
		slog.Int("buckets", len(refunds)), slog.Int64("units", units), slog.String("error", err.Error()))
}

// groupRefunds splits refunds by the slot of their buckets.
func (s *Store) groupRefunds(refunds []sluice.Refund) [][]sluice.Refund {
	var groups [][]sluice.Refund
	at := make(map[int]int, 4)
	for _, r := range refunds {
		slot := slotOf(s.keys.key(&r.Hit))
		i, ok := at[slot]
		if !ok {
			i = len(groups)
			at[slot] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], r)
	}
	return groups
}

// refund applies refunds that may lie in several slots: one refund script
// call per slot, in one pipeline. It returns the first failure, the first
// ambiguous one if any.
func (cl *cluster) refund(ctx context.Context, refunds []sluice.Refund) error {
	groups := cl.s.groupRefunds(refunds)
	cmds := make([][]any, len(groups))
	for i, g := range groups {
		cmds[i] = cl.s.refundCommand(g)
	}
	replies, errs := cl.runMany(ctx, "redisstore: refund", cmds)
	var failure error
	for i, g := range groups {
		err := errs[i]
		if err == nil {
			err = decodeRefund(replies[i], len(g))
		}
		if err != nil && (failure == nil || sluice.IsAmbiguous(err) && !sluice.IsAmbiguous(failure)) {
			failure = err
		}
	}
	return failure
}

// reset deletes the buckets of hits, one DEL per slot in one pipeline.
func (cl *cluster) reset(ctx context.Context, hits []sluice.Hit) error {
	pipe := cl.c.Pipeline()
	at := make(map[int][]any, 4)
	var order []int
	for i := range hits {
		k := cl.s.keys.key(&hits[i])
		slot := slotOf(k)
		if _, ok := at[slot]; !ok {
			order = append(order, slot)
			at[slot] = []any{"del"}
		}
		at[slot] = append(at[slot], k)
	}
	for _, slot := range order {
		_ = pipe.Process(ctx, redis.NewCmd(ctx, at[slot]...))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return classify("redisstore: reset", err)
	}
	return nil
}

// runMany sends script commands, each on one slot, in one cluster pipeline
// (one pipeline per node, the nodes concurrently), through the breakers of
// their masters, and returns each command's reply or classified error.
// Commands Redis answered NOSCRIPT are sent again, with the script's source,
// in a second pipeline: Redis did not run them. Nothing else is re-sent.
func (cl *cluster) runMany(ctx context.Context, op string, cmds [][]any) ([]any, []error) {
	replies, errs, _ := cl.runManyReloading(ctx, op, cmds)
	return replies, errs
}

// runManyReloading is runMany, also reporting which commands were sent
// again after NOSCRIPT (so after the commands that followed them in the
// first pipeline).
func (cl *cluster) runManyReloading(ctx context.Context, op string, cmds [][]any) ([]any, []error, []bool) {
	s := cl.s
	replies := make([]any, len(cmds))
	errs := make([]error, len(cmds))
	sent := make([]scriptCmd, len(cmds))
	resent := make([]bool, len(cmds))
	gates := make([]*gate, len(cmds))
	byMaster := make(map[*master]*gate, 4)
	pipe := cl.c.Pipeline()
	for i, cmd := range cmds {
		m := cl.masterFor(ctx, cmd[3].(string))
		g := byMaster[m]
		if g == nil {
			g = &gate{m: m, b: m.breaker}
			byMaster[m] = g
			if g.b != nil {
				ok, probe, retry := g.b.allow()
				if !ok {
					g.err = &sluice.StoreError{Op: op, Kind: sluice.ErrBreakerOpen, RetryAfter: retry}
				}
				g.probe = probe
			}
			if g.err == nil {
				if err := m.reach.check(op); err != nil {
					var se *sluice.StoreError
					if g.unsent, g.quiet = true, errors.As(err, &se); !g.quiet {
						err = classify(op, err)
					}
					g.err = err
				}
			}
		}
		gates[i] = g
		if g.err != nil && (g.unsent || errors.Is(g.err, sluice.ErrBreakerOpen)) {
			errs[i] = g.err
			continue
		}
		sent[i] = newScriptCmd(ctx, cmd...)
		_ = pipe.Process(ctx, sent[i])
	}
	if pipe.Len() > 0 {
		_, _ = pipe.Exec(ctx)
		for try := 0; ; try++ { // TRYAGAIN: Redis ran none of them
			var busy []int
			for i := range sent {
				if sent[i].Cmd != nil && redis.HasErrorPrefix(sent[i].Err(), "TRYAGAIN") {
					busy = append(busy, i)
				}
			}
			if len(busy) == 0 || !tryAgain(ctx, sent[busy[0]].Err(), try) {
				break
			}
			pipe = cl.c.Pipeline()
			for _, i := range busy {
				sent[i] = newScriptCmd(ctx, slices.Clone(cmds[i])...)
				_ = pipe.Process(ctx, sent[i])
			}
			_, _ = pipe.Exec(ctx)
		}
		var again []int
		for i := range sent {
			if sent[i].Cmd != nil && redis.HasErrorPrefix(sent[i].Err(), "NOSCRIPT") {
				again = append(again, i)
			}
		}
		if len(again) > 0 {
			pipe = cl.c.Pipeline()
			for _, i := range again {
				resent[i] = true
				s.reloads.Add(1)
				if s.events != nil {
					s.events.ScriptReloaded(gates[i].m.addr)
				}
				cmd := append([]any{"eval", scriptOf(cmds[i]).src}, cmds[i][2:]...)
				sent[i] = newScriptCmd(ctx, cmd...)
				_ = pipe.Process(ctx, sent[i])
			}
			_, _ = pipe.Exec(ctx)
		}
	}
	for i := range sent {
		if sent[i].Cmd == nil {
			continue
		}
		reply, err := sent[i].Result()
		if err != nil {
			gates[i].m.reach.observe(err)
			err = classify(op, err)
			if g := gates[i]; g.err == nil {
				g.err = err
			}
		}
		replies[i], errs[i] = reply, err
	}
	reloaded := false
	for _, g := range byMaster {
		if g.quiet { // suspect: nothing sent, nothing learnt
			if g.probe {
				g.b.record(true, context.Canceled) // lets another call probe
			}
			continue
		}
		if g.b != nil && !errors.Is(g.err, sluice.ErrBreakerOpen) {
			g.b.record(g.probe, g.err)
		}
		if g.err != nil && !reloaded {
			reloaded = true
			cl.failed(ctx, g.err)
		}
	}
	return replies, errs, resent
}

// gate is one master in a runMany call: its breaker asked once and told
// once, its reachability checked once.
type gate struct {
	m      *master
	b      *breaker // m's, nil when disabled
	probe  bool
	err    error // the first failure among its commands
	unsent bool  // err: the master was found unreachable; nothing was sent
	quiet  bool  // err: the master is only suspect; the breaker is not told
}

// misconfigured is the error of every call on a store whose start-up check
// found a Redis Cluster node behind a client that is not a cluster client.
func misconfigured() error {
	return &sluice.StoreError{Op: "redisstore: take", Kind: sluice.ErrUnavailable,
		Err: fmt.Errorf("%w: the server is a Redis Cluster node (cluster_enabled:1) but the client is not a *redis.ClusterClient: build it with redisstore.NewClusterClient (one address is enough), or pass the ClusterClient itself, so that the store sends one script per hash slot", ErrUnsupportedClient)}
}
