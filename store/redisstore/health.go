package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/sluicehq/sluice"
)

// Ready waits until the store can decide, or ctx is done: its start-up
// check is over, no circuit breaker is open, and Redis answers now, within
// ctx: one of the store's ready connections answers a PING (when it keeps
// them), or the scripts load (on every master of a cluster). So a Redis
// that has gone away is never reported ready, however recently the store
// set its connections up; what Ready reports is at most one round trip
// old. It returns nil once the store is ready; otherwise the last reason
// it was not, wrapping ctx's error. A store decides before it is ready
// too (its calls then fall to the rules' on_fail): call Ready at start,
// before serving, to begin with every decision made by Redis.
func (s *Store) Ready(ctx context.Context) error {
	for {
		err := s.readyNow(ctx)
		if err == nil {
			return nil
		}
		if errors.Is(err, sluice.ErrClosed) || s.wrong.Load() {
			return err
		}
		t := time.NewTimer(20 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("redisstore: not ready: %w (%w)", err, ctx.Err())
		case <-t.C:
		}
	}
}

// readyNow reports why the store cannot decide now, or nil; it waits at
// most for ctx.
func (s *Store) readyNow(ctx context.Context) error {
	switch {
	case s.closed.Load():
		return &sluice.StoreError{Op: "redisstore: ready", Kind: sluice.ErrClosed}
	case s.wrong.Load():
		return misconfigured()
	}
	select {
	case <-s.checked:
	case <-ctx.Done():
		return errors.New("the start-up check is not over")
	}
	if st := s.BreakerState(); st == sluice.BreakerOpen {
		return &sluice.StoreError{Op: "redisstore: ready", Kind: sluice.ErrBreakerOpen}
	}
	return s.b.ready(ctx)
}

// Health is a store's state, as [Store.Health] reads it and
// [Store.HealthHandler] serves it.
type Health struct {
	// Ready reports whether the store can decide now, Redis having just
	// answered (see [Store.Ready]); Reason says why not.
	Ready  bool   `json:"ready"`
	Reason string `json:"reason,omitempty"`
	// Breaker is the circuit breaker's state, the least healthy of a
	// cluster's: "closed", "open" or "half_open".
	Breaker string `json:"breaker"`
	// IdleConns is how many of the store's ready connections are idle;
	// -1 when it keeps none (Config.Conns negative, a cluster, or a
	// client that hands out no connections).
	IdleConns int `json:"idle_conns"`
	// Instances is how many stores share this one's keys, as last counted
	// ([Store.Instances]); 0 when not counted.
	Instances int `json:"instances"`
	// Evicting names the endpoints whose eviction policy can evict the
	// store's keys, and PolicyUnknown those that refuse to tell (see
	// Config.PolicyCheckInterval).
	Evicting      []string `json:"evicting,omitempty"`
	PolicyUnknown []string `json:"policy_unknown,omitempty"`
}

// Health reads the store's state, waiting at most for ctx to decide
// whether it is ready: it asks Redis as [Store.Ready] does, once.
func (s *Store) Health(ctx context.Context) Health {
	h := Health{Breaker: s.BreakerState().String(), Instances: s.Instances()}
	if err := s.readyNow(ctx); err != nil {
		h.Reason = err.Error()
	} else {
		h.Ready = true
	}
	h.IdleConns = s.b.idleConns()
	s.policy.mu.Lock()
	for ep, evicting := range s.policy.evicting {
		if evicting {
			h.Evicting = append(h.Evicting, ep)
		}
	}
	for ep, unknown := range s.policy.unknown {
		if unknown {
			h.PolicyUnknown = append(h.PolicyUnknown, ep)
		}
	}
	s.policy.mu.Unlock()
	slices.Sort(h.Evicting)
	slices.Sort(h.PolicyUnknown)
	return h
}

// HealthHandler serves the store's [Health] as JSON, with 200 when it is
// ready and 503 when it is not: a readiness probe for an orchestrator. It
// waits at most a second (less if the request's context says so) to tell.
// Do not use it as a liveness probe: a store that cannot reach Redis still
// limits, through each rule's on_fail, and restarting the process mends
// nothing.
func (s *Store) HealthHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), time.Second)
		defer cancel()
		h := s.Health(ctx)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		if !h.Ready {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_ = json.NewEncoder(w).Encode(h)
	})
}
