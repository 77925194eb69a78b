package redisstore

import (
	"context"
	"errors"
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
// *sluice.PartialError (see partialFailure).

// cluster is the topology of a Redis Cluster client: each master's
// circuit breaker and reachability, and the coalescers of the slots.
type cluster struct {
	c        *redis.ClusterClient
	label    string // its name: Config.Endpoint, or "cluster"
	breakers *breakers
	closed   func() bool // the store is closed: reach stops dialling
	log      *slog.Logger
	masters  sync.Map // master address → *master
	hooked   sync.Map // node client → struct{}: its dials are watched
	scripts  *decider
	// coalescers, when the store coalesces, hold a coalescer per slot,
	// made on first use: a batch is one script call, so one slot. Each
	// batches up to batch calls with lanes in flight.
	coalescers     *[hashSlots]atomic.Pointer[coalescer]
	batch, lanes   int
	refundFailures atomic.Int64
}

// newCluster returns the topology of a cluster client, sending its
// scripts through a sender counting reloads in reloads, for a store that
// is closed once closed reports true.
func newCluster(c *redis.ClusterClient, cfg Config, keys *keyer, reloads *atomic.Int64, closed func() bool) *cluster {
	cl := &cluster{c: c, label: cfg.Endpoint, breakers: newBreakers(cfg.Breaker, cfg.Events), closed: closed,
		log: cfg.Logger, batch: cfg.Coalesce, lanes: cfg.CoalesceLanes}
	if cl.label == "" {
		cl.label = "cluster"
	}
	cl.scripts = &decider{keys: keys, send: &sender{link: cl, events: cfg.Events, reloads: reloads},
		heal: newHealer(cfg), where: cl.endpointOf}
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
	c := newCoalescer(cl.scripts, nil, cl.batch, cl.lanes)
	if p.CompareAndSwap(nil, c) {
		return c
	}
	return p.Load()
}

// master is one Redis Cluster master the store sends commands to, named
// by its address in events, logs and metrics: its circuit breaker and
// whether it can be reached (see reach).
type master struct {
	route
	hooked atomic.Pointer[redis.Client] // the last node client whose dials reach watches
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
	m := &master{route: route{addr: addr, breaker: cl.breakers.get(addr), reach: newReach(addr, node, cl.closed)}}
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

// route returns where a command on key goes: the master serving its slot.
func (cl *cluster) route(ctx context.Context, key string) route {
	return cl.masterFor(ctx, key).route
}

// endpointOf names the master serving key's slot.
func (cl *cluster) endpointOf(key string) string {
	return cl.masterFor(context.Background(), key).addr
}

// process sends one command through the cluster client.
func (cl *cluster) process(ctx context.Context, cmd redis.Cmder) error {
	return cl.c.Process(ctx, cmd)
}

// pipeline returns a cluster pipeline: one pipeline per node, the nodes
// concurrently.
func (cl *cluster) pipeline() redis.Pipeliner { return cl.c.Pipeline() }

// breakerState returns the least healthy state of the masters' breakers.
func (cl *cluster) breakerState() sluice.BreakerState { return cl.breakers.state() }

// name names the cluster: Config.Endpoint, or "cluster".
func (cl *cluster) name() string { return cl.label }

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
// partial lets a request whose slots failed only in part keep the
// decisions of the others (see Store.TakePartial).
func (cl *cluster) take(ctx context.Context, hits []sluice.Hit, out []sluice.Result, partial bool) error {
	r := cl.scripts.newRequest(hits, out)
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
		return cl.scripts.decide(ctx, []*request{&r})
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
func (cl *cluster) groupBySlot(keys []string, hits []sluice.Hit) []*slotGroup {
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
		g.req = cl.scripts.newRequest(g.hits, g.out)
	}
	return groups
}

// takeSlots decides a request whose hits lie in several slots. With
// partial, failed slots fail only their hits (see partialFailure).
func (cl *cluster) takeSlots(ctx context.Context, keys []string, hits []sluice.Hit, out []sluice.Result, partial bool) error {
	groups := cl.groupBySlot(keys, hits)
	var errs []error
	if cl.coalescers != nil {
		errs = cl.takeCoalesced(ctx, groups)
	} else {
		errs = cl.takeGroups(ctx, groups)
	}
	var failure error
	for i, g := range groups {
		if errs[i] != nil {
			failure = worse(failure, errs[i])
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
	replies, errs, _ := cl.scripts.send.many(ctx, "redisstore: take", cmds)
	for i, g := range groups {
		if errs[i] == nil {
			errs[i] = cl.scripts.finish(replies[i], []*request{&g.req})
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
	undos, cmds := cl.undos(groups)
	if len(cmds) == 0 {
		return
	}
	replies, errs := cl.sendUndos(ctx, cmds)
	for i, u := range undos {
		cl.settleUndo(ctx, u, replies[2*i:2*i+2], errs[2*i:2*i+2], hits, out)
	}
}

// undo is one slot's part of giveBack.
type undo struct {
	g       *slotGroup
	refunds []sluice.Refund
	again   request // the slot's hits and the refusing hit
}

// undos returns the undos of the groups that took something, and their
// commands: per undo its refund, then its hits decided again.
func (cl *cluster) undos(groups []*slotGroup) ([]*undo, [][]any) {
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
		u.again = cl.scripts.newRequest(again, make([]sluice.Result, len(again)))
		// The refusing hit's key shares the slot's hash tag; it is never
		// written, as its request is never admitted.
		u.again.setKey(len(again)-1, u.again.keys[0]+":refuse")
		undos = append(undos, u)
		cmds = append(cmds, cl.scripts.refundCommand(u.refunds), takeCommand([]*request{&u.again}))
	}
	return undos, cmds
}

// sendUndos sends the undos' commands in one pipeline. A decision whose
// refund was re-sent after NOSCRIPT ran before it: it is sent again.
func (cl *cluster) sendUndos(ctx context.Context, cmds [][]any) ([]any, []error) {
	replies, errs, resent := cl.scripts.send.many(ctx, "redisstore: refund", cmds)
	var stale []int // decisions that ran before their refund was re-sent
	for i := 0; i < len(cmds); i += 2 {
		if resent[i] && errs[i] == nil {
			stale = append(stale, i+1)
		}
	}
	if len(stale) > 0 {
		again := make([][]any, len(stale))
		for j, i := range stale {
			again[j] = cmds[i]
		}
		r, e, _ := cl.scripts.send.many(ctx, "redisstore: refund", again)
		for j, i := range stale {
			replies[i], errs[i] = r[j], e[j]
		}
	}
	return replies, errs
}

// settleUndo writes into out what u's slot reports once its takes were
// given back, from the replies and errors of its refund and decision.
func (cl *cluster) settleUndo(ctx context.Context, u *undo, replies []any, errs []error, hits []sluice.Hit, out []sluice.Result) {
	rerr, derr := errs[0], errs[1]
	if rerr == nil {
		rerr = decodeRefund(replies[0], len(u.refunds))
	}
	for _, at := range u.g.idx {
		out[at].Receipt = sluice.Receipt{}
	}
	if rerr != nil {
		cl.refundFailed(ctx, rerr, u.refunds)
		return
	}
	if derr == nil {
		derr = cl.scripts.finish(replies[1], []*request{&u.again})
	}
	if derr != nil {
		return // the takes' results stand, without receipts
	}
	for j, at := range u.g.idx {
		r := u.again.out[j]
		r.Limit, r.Receipt = hits[at].Limit, sluice.Receipt{}
		out[at] = r
	}
}

// refuser is a hit that can never pass: it makes a request that carries it
// consume nothing.
var refuser = sluice.Hit{Key: "refuse", Limit: sluice.PerHour(1), Cost: 2}

// refund applies refunds that may lie in several slots: one refund script
// call per slot, in one pipeline. It returns the first failure, the first
// ambiguous one if any.
func (cl *cluster) refund(ctx context.Context, refunds []sluice.Refund) error {
	_, errs := cl.refundSlots(ctx, refunds)
	var failure error
	for _, err := range errs {
		failure = worse(failure, err)
	}
	return failure
}

// refundQuietly gives back refunds and counts and logs what fails.
func (cl *cluster) refundQuietly(ctx context.Context, refunds []sluice.Refund) {
	if len(refunds) == 0 {
		return
	}
	groups, errs := cl.refundSlots(ctx, refunds)
	for i, err := range errs {
		if err != nil {
			cl.refundFailed(ctx, err, groups[i])
		}
	}
}

// refundSlots gives back refunds, grouped by the slot of their buckets:
// one refund script call per slot, in one pipeline. It returns the groups
// and each one's error.
func (cl *cluster) refundSlots(ctx context.Context, refunds []sluice.Refund) ([][]sluice.Refund, []error) {
	groups := cl.groupRefunds(refunds)
	cmds := make([][]any, len(groups))
	for i, g := range groups {
		cmds[i] = cl.scripts.refundCommand(g)
	}
	replies, errs, _ := cl.scripts.send.many(ctx, "redisstore: refund", cmds)
	for i, g := range groups {
		if errs[i] == nil {
			errs[i] = decodeRefund(replies[i], len(g))
		}
	}
	return groups, errs
}

// refundFailed counts and logs a refund that failed. It is not retried:
// a retry can give back twice. It loses at most what it was for.
func (cl *cluster) refundFailed(ctx context.Context, err error, refunds []sluice.Refund) {
	var units int64
	for _, r := range refunds {
		units += r.Amount()
	}
	cl.refundFailures.Add(1)
	cl.log.LogAttrs(ctx, slog.LevelWarn, "redisstore: a refund of a refused cross-slot request failed; its units stay consumed until their buckets refill",
		slog.Int("buckets", len(refunds)), slog.Int64("units", units), slog.String("error", err.Error()))
}

// groupRefunds splits refunds by the slot of their buckets.
func (cl *cluster) groupRefunds(refunds []sluice.Refund) [][]sluice.Refund {
	var groups [][]sluice.Refund
	at := make(map[int]int, 4)
	for _, r := range refunds {
		slot := slotOf(cl.scripts.keys.key(&r.Hit))
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

// reset deletes the buckets of hits, one DEL per slot in one pipeline.
func (cl *cluster) reset(ctx context.Context, hits []sluice.Hit) error {
	pipe := cl.c.Pipeline()
	at := make(map[int][]any, 4)
	var order []int
	for i := range hits {
		k := cl.scripts.keys.key(&hits[i])
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

// policies reads every master's eviction policy.
func (cl *cluster) policies(ctx context.Context) ([]policyReading, error) {
	var mu sync.Mutex
	var out []policyReading
	err := cl.c.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		r, err := readPolicy(ctx, c, c.Options().Addr)
		if err != nil {
			return err
		}
		mu.Lock()
		out = append(out, r)
		mu.Unlock()
		return nil
	})
	return out, err
}

// ready loads the scripts on every master.
func (cl *cluster) ready(ctx context.Context) error {
	return cl.c.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		return loadScripts(ctx, c)
	})
}

// idleConns is -1: a cluster keeps no ready connections.
func (cl *cluster) idleConns() int { return -1 }

// wrongClient is false: the client is a cluster client.
func (cl *cluster) wrongClient(context.Context) bool { return false }

// loops is none: a cluster's masters are probed by requests.
func (cl *cluster) loops() []func(ctx context.Context) { return nil }

// partialFailure settles a request some of whose slot groups failed (errs,
// the first or first ambiguous failure being failure) while others were
// decided into out: it returns the *sluice.PartialError naming the failed
// hits, after giving back the decided groups' takes if a decided hit
// refused. It returns nil, deciding nothing, when every group failed.
func (cl *cluster) partialFailure(ctx context.Context, groups []*slotGroup, errs []error, failure error, hits []sluice.Hit, out []sluice.Result) error {
	var decided []*slotGroup
	var failed []int
	admitted := true
	for i, g := range groups {
		if errs[i] != nil {
			for _, at := range g.idx {
				failed = append(failed, at)
				out[at] = sluice.Result{}
			}
			continue
		}
		decided = append(decided, g)
		admitted = admitted && sluice.Admitted(g.hits, g.out)
	}
	if len(decided) == 0 {
		return nil
	}
	if !admitted {
		cl.giveBack(ctx, decided, hits, out)
	}
	slices.Sort(failed)
	return &sluice.PartialError{Failed: failed, Err: failure}
}
