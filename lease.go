package sluice

import (
	"fmt"
	"time"
)

// LeasePolicy is a rule's local-lease setting, read by a lease store
// (package store/lease) from each hit's [Hit.Lease]. Other stores ignore
// it. The zero value leases nothing and detects no hot keys.
//
// A leased bucket is served in process from up to K tokens taken from the
// shared store in one call; see store/lease for K, the drift bound and
// what the answers report under a lease.
type LeasePolicy struct {
	// Rule names the rule the policy belongs to, for metrics and logs.
	// The rules package fills it in.
	Rule string
	// Enabled leases the rule's buckets (token bucket and fixed window;
	// the other algorithms pass through unleased).
	Enabled bool
	// MaxLease caps K, the tokens one lease may take. 0 means no cap
	// beyond the store's drift bound. A cap of 1 leases nothing.
	MaxLease int64
	// TTL is how long a lease may be served from before its unused
	// tokens go back. 0 means the lease store's default.
	TTL time.Duration
	// HotKeys says how the rule's hot keys are detected and handled.
	HotKeys HotKeyPolicy
}

// HotKeyPolicy is a rule's hot-key handling. The zero value detects
// nothing.
type HotKeyPolicy struct {
	// Threshold is the rate, in shared-store calls per second for one key
	// of the rule, from which the key is hot; checks refused in process (a
	// remembered refusal or a lease's denial) count as calls, so a key
	// flooded over its limit turns hot too. 0 turns detection off.
	Threshold int64
	// Lease leases a hot key's bucket even when the policy's Enabled is
	// false (lease escalation).
	Lease bool
	// Split, when at least 2, splits a hot key's bucket into Split
	// sub-buckets of the limit divided by Split, each request using one.
	// Token bucket and fixed window only. 0 does not split.
	Split int
}

// MaxSplit caps [HotKeyPolicy.Split].
const MaxSplit = 64

// Active reports whether p asks a lease store for anything: leases or
// hot-key detection.
func (p *LeasePolicy) Active() bool {
	return p != nil && (p.Enabled || p.HotKeys.Threshold > 0)
}

// Validate reports why p is not a usable policy, naming the field as a
// rule file spells it ("lease.max_lease"), or nil.
func (p *LeasePolicy) Validate() error {
	h := &p.HotKeys
	switch {
	case p.MaxLease < 0:
		return fmt.Errorf("lease.max_lease: %d is negative", p.MaxLease)
	case p.TTL < 0:
		return fmt.Errorf("lease.ttl: %v is negative", p.TTL)
	case p.TTL > 0 && p.TTL < time.Millisecond:
		return fmt.Errorf("lease.ttl: %v is below 1ms", p.TTL)
	case p.TTL > time.Minute:
		return fmt.Errorf("lease.ttl: %v is above 1m: tokens held that long defeat the limit", p.TTL)
	case h.Threshold < 0:
		return fmt.Errorf("hot_keys.threshold: %d is negative", h.Threshold)
	case h.Split < 0 || h.Split == 1 || h.Split > MaxSplit:
		return fmt.Errorf("hot_keys.split: %d: must be 0 (off) or from 2 to %d", h.Split, MaxSplit)
	case (h.Lease || h.Split > 0) && h.Threshold == 0:
		return fmt.Errorf("hot_keys.threshold: required when hot keys are leased or split")
	}
	return nil
}
