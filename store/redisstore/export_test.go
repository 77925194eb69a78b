package redisstore

import (
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/refusal"
)

// KeyOf returns the Redis key s uses for h.
func KeyOf(s *Store, h sluice.Hit) string { return s.keys.key(&h) }

// WaitStartupCheck waits until the background start-up check has finished.
func WaitStartupCheck(s *Store) { <-s.checked }

// SetCoalesceClock makes s's coalescer read clock to judge its members'
// budgets and to time its calls. s must coalesce; call it before any Take.
func SetCoalesceClock(s *Store, clock func() time.Time) { coalescerOf(s).now = clock }

// scriptsOf returns the decider of s's topology.
func scriptsOf(s *Store) *decider {
	if cl, ok := s.b.(*cluster); ok {
		return cl.scripts
	}
	return s.b.(*node).scripts
}

// coalescerOf returns the coalescer of s, a single node's store.
func coalescerOf(s *Store) *coalescer { return s.b.(*node).coalesce }

// Queued returns how many calls wait in s's coalescing queue.
func Queued(s *Store) int {
	c := coalescerOf(s)
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.queue)
}

// Lanes is how many script calls a coalescing store keeps in flight by
// default.
const Lanes = defaultLanes

// SetBeforeQueue makes s's coalescer call f when a Take found every lane
// busy, just before it queues. s must coalesce; call it before any Take
// that can find every lane busy.
func SetBeforeQueue(s *Store, f func()) { coalescerOf(s).beforeQueue = f }

// IdleConns returns how many of s's ready connections are idle.
func IdleConns(s *Store) int { return max(s.b.idleConns(), 0) }

// Conns returns how many ready connections s keeps (0: none).
func Conns(s *Store) int {
	if n, ok := s.b.(*node); ok && n.conns != nil {
		return n.conns.Size()
	}
	return 0
}

// SlotOf returns the Redis Cluster hash slot of key.
func SlotOf(key string) int { return slotOf(key) }

// TakeSHA returns the take script's digest.
func TakeSHA() any { return takeScript.sha }

// ModeLast marks the last hit of a request in the take script's arguments.
const ModeLast = modeLast

// RefundFailures returns how many refunds of refused cross-slot requests
// failed.
func RefundFailures(s *Store) int64 { return s.b.(*cluster).undo.failures.Load() }

// Endpoint returns the name s gives its Redis endpoint in events and logs.
func Endpoint(s *Store) string { return s.b.name() }

// RefundSHA returns the refund script's digest.
func RefundSHA() any { return refundScript.sha }

// SetRefusalClock makes s's memory of refusals read clock, the clock its
// scripts decide by in the test. Call it before any Take.
func SetRefusalClock(s *Store, clock func() time.Time) {
	now := func() int64 { return clock().UnixNano() }
	s.record = refusal.NewRecord(0, now)
	s.refusals = s.refusals.WithClock(now).Knowing(s.record)
}

// Cross-slot orders (see SetCrossSlotOrder).
const (
	OrderWhenScarce = "when scarce"
	OrderAlways     = "always"
	OrderNever      = "never"
)

// SetCrossSlotOrder sets when s, a cluster's store, decides a cross-slot
// request's slots in order: OrderWhenScarce (the default), OrderAlways or
// OrderNever (side by side, as the store did before it ordered them).
// Call it before any Take.
func SetCrossSlotOrder(s *Store, o string) {
	s.b.(*cluster).order = map[string]order{OrderWhenScarce: orderWhenScarce, OrderAlways: orderAlways, OrderNever: orderNever}[o]
}

// SetScarcityClock makes s, a cluster's store, read clock to time how
// long a slot counts as low. Call it before any Take.
func SetScarcityClock(s *Store, clock func() time.Time) {
	s.b.(*cluster).scarce.now = func() int64 { return clock().UnixNano() }
}
