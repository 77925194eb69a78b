package redisstore

import (
	"context"
	"errors"
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
// one pipeline per node, the nodes concurrently), or, while a bucket of
// the request is low or two could run out, the scarcest bucket's slot
// first and the others after it (see scarce.go). When one group refuses the request, or
// some fail, what the others took is given back (see undo.go).
//
// A coalescing store has a coalescer per slot (a batch is one script call,
// so one slot's): a single-slot request goes through its slot's; a
// cross-slot request sends each group through its slot's, the groups that
// find a free lane together in one cluster pipeline, the others queued in
// their slots' batches, all side by side (see takeCoalesced). Refunds are
// not coalesced.

// cluster is the topology of a Redis Cluster client: each master's
// circuit breaker and reachability, and the coalescers of the slots.
type cluster struct {
	c        *redis.ClusterClient
	label    string // its name: Config.Endpoint, or "cluster"
	breakers *breakers
	closed   func() bool // the store is closed: reach stops dialling
	masters  sync.Map    // master address → *master
	hooked   sync.Map    // node client → struct{}: its dials are watched
	scripts  *decider
	// coalescers, when the store coalesces, hold a coalescer per slot,
	// made on first use: a batch is one script call, so one slot. Each
	// batches up to batch calls with lanes in flight.
	coalescers   *[hashSlots]atomic.Pointer[coalescer]
	batch, lanes int
	undo         *undoer // gives back what cross-slot requests took
	// scarce says when and in which order a cross-slot request's slots
	// are decided (see scarce.go), by order.
	scarce *scarcity
	order  order
}

var _ backend = (*cluster)(nil)

// newCluster returns the topology of a cluster client, sending its
// scripts through a sender counting reloads in reloads, for a store that
// is closed once closed reports true and that instances stores share
// (0: unknown).
func newCluster(c *redis.ClusterClient, cfg Config, keys *keyer, reloads *atomic.Int64, closed func() bool, instances func() int) *cluster {
	cl := &cluster{c: c, label: cfg.Endpoint, breakers: newBreakers(cfg.Breaker, cfg.Events), closed: closed,
		batch: cfg.Coalesce, lanes: cfg.CoalesceLanes}
	if cl.label == "" {
		cl.label = "cluster"
	}
	cl.scripts = &decider{keys: keys, send: &sender{link: cl, events: cfg.Events, reloads: reloads},
		heal: newHealer(cfg), where: cl.endpointOf}
	cl.undo = &undoer{scripts: cl.scripts, log: cfg.Logger}
	cl.scarce = newScarcity(instances)
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

// takeSlots decides a request whose hits lie in several slots. With
// partial, failed slots fail only their hits (see undoer.partialFailure).
func (cl *cluster) takeSlots(ctx context.Context, keys []string, hits []sluice.Hit, out []sluice.Result, partial bool) error {
	groups := cl.groupBySlot(keys, hits)
	first := cl.scarce.enter(groups, cl.order)
	defer cl.scarce.leave(groups)
	var errs []error
	if first < 0 {
		errs = cl.decideGroups(ctx, groups)
	} else {
		errs = cl.takeInOrder(ctx, groups, first, partial)
	}
	cl.scarce.observe(groups, errs)
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
	if failure != nil {
		if partial {
			if err := cl.undo.partialFailure(ctx, groups, errs, failure, hits, out); err != nil {
				return err
			}
		}
		// The request is undecided: give back what the decided slots took.
		cl.undo.abandon(ctx, groups, errs)
		return failure
	}
	if !sluice.Admitted(hits, out) {
		cl.undo.giveBack(ctx, groups, hits, out)
	}
	return nil
}

// decideGroups decides groups side by side, each with one script call, and
// returns each group's error.
func (cl *cluster) decideGroups(ctx context.Context, groups []*slotGroup) []error {
	if cl.coalescers != nil {
		return cl.takeCoalesced(ctx, groups)
	}
	return cl.takeGroups(ctx, groups)
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
		c := cl.coalescer(g.slot)
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

// refund applies refunds (see undoer.refund).
func (cl *cluster) refund(ctx context.Context, refunds []sluice.Refund) error {
	return cl.undo.refund(ctx, refunds)
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
