package redisstore

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/store/redisstore/internal/conn"
)

// failoverPlaceholder is the address go-redis gives a client from
// redis.NewFailoverClient, which dials whatever primary the sentinels name.
const failoverPlaceholder = "FailoverClient"

// node is the topology of one Redis endpoint: a single node, or the
// primary a Sentinel-managed client follows. One script call decides a
// request, on a ready connection when the node keeps them (see conn.Set).
//
// A Sentinel-managed primary is followed by a dial hook on the client
// that records the address of every connection it opens, so events, logs
// and metrics name the current primary rather than go-redis's placeholder,
// and each primary gets a circuit breaker of its own (a new primary starts
// with a closed one), probed by requests. A single node's one breaker is
// probed in the background (see watch).
type node struct {
	client Client
	addr   string // Config.Endpoint, the client's address, or "redis"
	// primary is the address of the Sentinel-managed primary's last
	// connection (nil before the first); sentinel tells it is followed.
	primary  atomic.Pointer[string]
	sentinel bool
	live     func() string // n.name, made once
	breaker  *breaker      // a single node's; nil when disabled or with Sentinel
	breakers *breakers     // a Sentinel-managed primary's, by address
	conns    *conn.Set     // nil when the client cannot hand out connections, or turned off
	scripts  *decider
	coalesce *coalescer // nil when off
}

var _ backend = (*node)(nil)

// newNode returns the topology of a client that is not a cluster client,
// sending its scripts through a sender counting reloads in reloads.
func newNode(client Client, cfg Config, keys *keyer, reloads *atomic.Int64) (*node, error) {
	var opt *redis.Options
	if oc, ok := client.(interface{ Options() *redis.Options }); ok {
		opt = oc.Options()
	}
	conns, err := cfg.conns(opt)
	if err != nil {
		return nil, err
	}
	n := &node{client: client, addr: cfg.Endpoint, breakers: newBreakers(cfg.Breaker, cfg.Events)}
	if n.addr == "" {
		n.addr = "redis"
		if opt != nil && opt.Addr != "" {
			n.addr = opt.Addr
		}
	}
	n.live = n.name
	rc, _ := client.(*redis.Client)
	n.sentinel = rc != nil && cfg.Endpoint == "" && rc.Options().Addr == failoverPlaceholder
	// Only a client of go-redis's own type: a wrapper that overrides
	// Process must see every command.
	if rc != nil && conns > 0 {
		if conn.Safe(opt) {
			o := conn.Options{Size: conns, SetupFor: cfg.SetupTimeout, Log: cfg.Logger, Endpoint: n.addr,
				Scripts: sources}
			if n.sentinel {
				o.Name = n.live // its logs name the primary, not the placeholder
			}
			n.conns = conn.New(rc, opt, o)
		} else {
			cfg.Logger.LogAttrs(context.Background(), slog.LevelWarn,
				"redisstore: the client's connections are set up on first use, inside a request's budget; build it with redisstore.NewClient, or set Protocol: 2 or MaintNotificationsConfig Mode disabled in redis.Options, so that the store keeps connections ready",
				slog.String("endpoint", n.addr))
		}
	}
	if n.sentinel {
		rc.AddHook(n)
	} else if n.breaker = newBreaker(n.addr, cfg.Breaker, cfg.Events); n.breaker != nil {
		n.breaker.background = true
	}
	n.scripts = &decider{keys: keys, send: &sender{link: n, events: cfg.Events, reloads: reloads},
		heal: newHealer(cfg), where: func(string) string { return n.name() }}
	if cfg.Coalesce > 1 {
		n.coalesce = newCoalescer(n.scripts, n.conns, cfg.Coalesce, cfg.CoalesceLanes)
	}
	return n, nil
}

// name returns the endpoint's name: a Sentinel-managed primary's address,
// or "sentinel" before the first dial.
func (n *node) name() string {
	if !n.sentinel {
		return n.addr
	}
	if a := n.primary.Load(); a != nil {
		return *a
	}
	return "sentinel"
}

// route returns where every command goes: the node, or the current
// primary, whose name may change during a call (see route.live).
func (n *node) route(context.Context, string) route {
	if !n.sentinel {
		return route{addr: n.addr, breaker: n.breaker}
	}
	addr := n.name()
	return route{addr: addr, breaker: n.breakers.get(addr), live: n.live}
}

// process sends cmd on a ready connection, waiting for one within ctx; or
// through the client when the node keeps none.
func (n *node) process(ctx context.Context, cmd redis.Cmder) error {
	if n.conns == nil {
		return n.client.Process(ctx, cmd)
	}
	return n.conns.Process(ctx, cmd)
}

// pipeline returns nil: a node sends one command per call.
func (n *node) pipeline() redis.Pipeliner { return nil }

// failed does nothing: a node has no map to reload.
func (n *node) failed(context.Context, error) {}

func (n *node) take(ctx context.Context, hits []sluice.Hit, out []sluice.Result, _ bool) error {
	if n.coalesce != nil {
		return n.coalesce.take(ctx, hits, out)
	}
	r := n.scripts.newRequest(hits, out)
	return n.scripts.decide(ctx, []*request{&r})
}

func (n *node) refund(ctx context.Context, refunds []sluice.Refund) error {
	reply, err := n.scripts.send.one(ctx, "redisstore: refund", n.scripts.refundCommand(refunds))
	if err != nil {
		return err
	}
	return decodeRefund(reply, len(refunds))
}

// reset deletes the buckets of hits with one DEL.
func (n *node) reset(ctx context.Context, hits []sluice.Hit) error {
	cmd := make([]any, 0, 1+len(hits))
	cmd = append(cmd, "del")
	for i := range hits {
		cmd = append(cmd, n.scripts.keys.key(&hits[i]))
	}
	c := redis.NewCmd(ctx, cmd...)
	_ = n.client.Process(ctx, c)
	if err := c.Err(); err != nil {
		return classify("redisstore: reset", err)
	}
	return nil
}

// breakerState returns the state of the node's breaker, or of the
// current primary's.
func (n *node) breakerState() sluice.BreakerState {
	if b := n.route(context.Background(), "").breaker; b != nil {
		return b.State()
	}
	return sluice.BreakerClosed
}

func (n *node) policies(ctx context.Context) ([]policyReading, error) {
	r, err := readPolicy(ctx, n.client, n.name())
	if err != nil {
		return nil, err
	}
	return []policyReading{r}, nil
}

// ready checks, when the node keeps ready connections, that one answers a
// PING within ctx (see conn.Set.Check); otherwise it loads the scripts.
// Either way Redis answered for the store just now.
func (n *node) ready(ctx context.Context) error {
	if n.conns == nil {
		return loadScripts(ctx, n.client)
	}
	err := n.conns.Check(ctx)
	if err == nil {
		return nil
	}
	if down := n.conns.Down(); down != nil {
		return classify("redisstore: ready", down)
	}
	var se *sluice.StoreError
	if errors.As(err, &se) { // not sent: no connection, or none in time
		c := *se
		c.Op = "redisstore: ready"
		return &c
	}
	return classify("redisstore: ready", err)
}

func (n *node) idleConns() int {
	if n.conns == nil {
		return -1
	}
	return n.conns.Idles()
}

// wrongClient reports whether the server is a Redis Cluster node.
func (n *node) wrongClient(ctx context.Context) bool {
	info := redis.NewStringCmd(ctx, "info", "cluster")
	_ = n.client.Process(ctx, info)
	v, err := info.Result()
	return err == nil && strings.Contains(v, "cluster_enabled:1")
}

// loops keeps the ready connections, and probes a single node's open
// breaker.
func (n *node) loops() []func(ctx context.Context) {
	var run []func(ctx context.Context)
	if n.conns != nil {
		run = append(run, n.conns.Run)
	}
	if n.breaker != nil {
		run = append(run, n.watch)
	}
	return run
}

// watch probes the node in the background whenever its breaker opens,
// until ctx is done: after OpenFor, then again after each OpenFor the
// breaker stays open.
func (n *node) watch(ctx context.Context) {
	for {
		select {
		case <-n.breaker.opened:
		case <-ctx.Done():
			return
		}
		for {
			due, wait := n.breaker.probeDue()
			if due {
				n.breaker.probed(n.probe(ctx))
				continue
			}
			if wait <= 0 {
				break // closed
			}
			if !conn.Sleep(ctx, wait) {
				return
			}
		}
	}
}

// probe PINGs the node on a ready connection within the breaker's probe
// timeout. A connection found dead is dropped and the next one tried; when
// none is ready (the node cannot be reached, or is suspect), the probe
// fails. (A script cache a restart emptied is reloaded by the first call
// after, on NOSCRIPT.)
func (n *node) probe(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, n.breaker.probeFor)
	defer cancel()
	for {
		cmd := redis.NewStatusCmd(ctx, "ping")
		err := n.process(ctx, cmd)
		if err == nil || n.conns == nil || ctx.Err() != nil || conn.IsReply(err) || errors.Is(err, conn.ErrNoConn) {
			return err
		}
	}
}

// DialHook records the address of every connection a Sentinel-managed
// client opens.
func (n *node) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		if err == nil {
			if a := conn.RemoteAddr().String(); n.name() != a {
				n.primary.Store(&a)
			}
		}
		return conn, err
	}
}

// ProcessHook passes commands through.
func (n *node) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

// ProcessPipelineHook passes pipelines through.
func (n *node) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
