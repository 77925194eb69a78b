package redisstore

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/store/redisstore/internal/conn"
)

// policyWatch reads the servers' eviction policies at start and then every
// Config.PolicyCheckInterval: an endpoint that can evict the store's keys
// is logged when first seen so (and again after it stopped), and every
// reading goes to Events when they implement sluice.EvictionPolicyEvents.
// An endpoint that refuses to tell (managed services often rename or
// forbid CONFIG) is logged once, and reported with an empty policy.
type policyWatch struct {
	interval time.Duration // negative: at start only
	events   sluice.EvictionPolicyEvents
	log      *slog.Logger
	read     func(ctx context.Context) ([]policyReading, error) // the topology's policies

	mu       sync.Mutex
	evicting map[string]bool // by endpoint, as last read
	unknown  map[string]bool // by endpoint: its last reading was refused
}

// policyReading is one endpoint's eviction settings, or the error reply
// of a server that refused to give them.
type policyReading struct {
	endpoint, policy, maxmemory string
	refused                     error
}

// evicting reports whether the server can evict keys: it has a memory
// limit and a policy other than noeviction.
func (r policyReading) evicting() bool {
	return r.maxmemory != "0" && r.maxmemory != "" && r.policy != "noeviction"
}

// newPolicyWatch returns the watch of the policies that read reads.
func newPolicyWatch(cfg Config, read func(ctx context.Context) ([]policyReading, error)) *policyWatch {
	w := &policyWatch{interval: cfg.PolicyCheckInterval, log: cfg.Logger, read: read,
		evicting: map[string]bool{}, unknown: map[string]bool{}}
	w.events, _ = cfg.Events.(sluice.EvictionPolicyEvents)
	return w
}

// run checks every interval until ctx ends. The first check is the
// start-up check's.
func (w *policyWatch) run(ctx context.Context) {
	if w.interval <= 0 {
		return
	}
	t := time.NewTicker(w.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			cctx, cancel := context.WithTimeout(ctx, min(w.interval, 5*time.Second))
			w.check(cctx)
			cancel()
		}
	}
}

// check reads every endpoint's policy once, logs the changes and reports
// the readings.
func (w *policyWatch) check(ctx context.Context) {
	readings, err := w.read(ctx)
	if err != nil {
		// Not an answer from the server (a timeout): the next check
		// tries again.
		w.log.LogAttrs(ctx, slog.LevelDebug, "redisstore: cannot read the eviction policy", slog.String("error", err.Error()))
	}
	for _, r := range readings {
		w.mu.Lock()
		wasUnknown := w.unknown[r.endpoint]
		w.unknown[r.endpoint] = r.refused != nil
		w.mu.Unlock()
		if r.refused != nil {
			if !wasUnknown {
				err := r.refused
				if se := noPermission("redisstore: eviction policy", err); se != nil {
					err = se // names the permission that would let the store read it
				}
				w.log.LogAttrs(ctx, slog.LevelInfo,
					"redisstore: the server refuses CONFIG GET, so the store cannot check that it never evicts rate-limit keys; make sure its maxmemory-policy is noeviction (an evicted bucket forgets what it consumed)",
					slog.String("endpoint", r.endpoint), slog.String("error", err.Error()))
			}
			if w.events != nil {
				w.events.EvictionPolicyChecked(r.endpoint, "", false)
			}
			continue
		}
		ev := r.evicting()
		w.mu.Lock()
		was, seen := w.evicting[r.endpoint]
		w.evicting[r.endpoint] = ev
		w.mu.Unlock()
		switch {
		case ev && (!seen || !was):
			w.log.LogAttrs(ctx, slog.LevelWarn,
				"redisstore: Redis may evict rate-limit keys under memory pressure, and an evicted bucket forgets what it consumed; set maxmemory-policy noeviction or give the limiter its own Redis",
				slog.String("endpoint", r.endpoint), slog.String("maxmemory-policy", r.policy), slog.String("maxmemory", r.maxmemory))
		case !ev && seen && was:
			w.log.LogAttrs(ctx, slog.LevelInfo, "redisstore: Redis no longer evicts rate-limit keys",
				slog.String("endpoint", r.endpoint), slog.String("maxmemory-policy", r.policy), slog.String("maxmemory", r.maxmemory))
		}
		if w.events != nil {
			w.events.EvictionPolicyChecked(r.endpoint, r.policy, ev)
		}
	}
}

// readPolicy reads endpoint's maxmemory and maxmemory-policy through c. A
// server that answers with an error (CONFIG renamed away, or refused to
// the user) gives a refused reading; other errors are returned.
func readPolicy(ctx context.Context, c Client, endpoint string) (policyReading, error) {
	cfg, err := c.ConfigGet(ctx, "maxmemory*").Result()
	switch {
	case conn.IsReply(err):
		return policyReading{endpoint: endpoint, refused: err}, nil
	case err != nil:
		return policyReading{}, err
	}
	return policyReading{endpoint: endpoint, policy: cfg["maxmemory-policy"], maxmemory: cfg["maxmemory"]}, nil
}
