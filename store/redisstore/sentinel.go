package redisstore

import (
	"context"
	"net"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// failoverPlaceholder is the address go-redis gives a client from
// redis.NewFailoverClient, which dials whatever primary the sentinels name.
const failoverPlaceholder = "FailoverClient"

// primary follows the Sentinel-managed primary a failover client talks to:
// a dial hook on the client records the address of every connection it
// opens, so events, logs and metrics name the current primary rather than
// go-redis's placeholder, and each primary gets a circuit breaker of its
// own (a new primary starts with a closed one).
type primary struct {
	addr       atomic.Pointer[string]
	breakerCfg BreakerConfig
	s          *Store
	breakers   sync.Map // address → *breaker
}

// watchPrimary installs the dial hook on a failover client and returns
// the watcher, or nil when c is not one.
func watchPrimary(s *Store, c Client, cfg Config) *primary {
	rc, ok := c.(*redis.Client)
	if !ok || rc.Options().Addr != failoverPlaceholder {
		return nil
	}
	p := &primary{breakerCfg: cfg.Breaker, s: s}
	rc.AddHook(p)
	if s.ep != nil && s.ep.ready != nil {
		s.ep.ready.name = p.name // its logs name the primary, not the placeholder
	}
	return p
}

// name returns the primary's address, or "sentinel" before the first dial.
func (p *primary) name() string {
	if a := p.addr.Load(); a != nil {
		return *a
	}
	return "sentinel"
}

// breaker returns the current primary's breaker, or nil when disabled.
func (p *primary) breaker() *breaker {
	if p.breakerCfg.Disabled {
		return nil
	}
	addr := p.name()
	if b, ok := p.breakers.Load(addr); ok {
		return b.(*breaker)
	}
	b, _ := p.breakers.LoadOrStore(addr, newBreaker(addr, p.breakerCfg, p.s.events))
	return b.(*breaker)
}

// DialHook records the address of every connection the client opens.
func (p *primary) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		if err == nil {
			if a := conn.RemoteAddr().String(); p.name() != a {
				p.addr.Store(&a)
			}
		}
		return conn, err
	}
}

// ProcessHook passes commands through.
func (p *primary) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

// ProcessPipelineHook passes pipelines through.
func (p *primary) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// endpointName names the store's Redis endpoint in events and logs: the
// configured or client's address, or a Sentinel-managed primary's current
// address.
func (s *Store) endpointName() string {
	if s.primary != nil {
		return s.primary.name()
	}
	return s.endpoint
}

// endpointOf names the endpoint that holds key: on Redis Cluster the
// address of the master serving its slot, otherwise endpointName.
func (s *Store) endpointOf(key string) string {
	if s.cluster != nil {
		return s.cluster.masterFor(context.Background(), key).addr
	}
	return s.endpointName()
}
