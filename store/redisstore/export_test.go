package redisstore

import (
	"time"

	"github.com/sluicehq/sluice"
)

// SetTestClock makes s decide by clock instead of the Redis server's TIME.
// It exists only in test builds.
func SetTestClock(s *Store, clock func() time.Time) {
	s.now = func() int64 { return clock().UnixMicro() }
}

// KeyOf returns the Redis key s uses for h.
func KeyOf(s *Store, h sluice.Hit) string { return s.keys.key(&h) }

// WaitStartupCheck waits until the background start-up check has finished.
func WaitStartupCheck(s *Store) { <-s.checked }

// SetCoalesceClock makes s's coalescer read clock to judge its members'
// budgets and to time its calls. s must coalesce; call it before any Take.
func SetCoalesceClock(s *Store, clock func() time.Time) { s.coalesce.now = clock }

// Queued returns how many calls wait in s's coalescing queue.
func Queued(s *Store) int {
	s.coalesce.mu.Lock()
	defer s.coalesce.mu.Unlock()
	return len(s.coalesce.queue)
}

// Lanes is how many script calls a coalescing store keeps in flight by
// default.
const Lanes = defaultLanes

// SetBeforeQueue makes s's coalescer call f when a Take found every lane
// busy, just before it queues. s must coalesce; call it before any Take
// that can find every lane busy.
func SetBeforeQueue(s *Store, f func()) { s.coalesce.beforeQueue = f }

// Conns returns how many ready connections s keeps (0: none).
func Conns(s *Store) int {
	if s.ep.ready == nil {
		return 0
	}
	return s.ep.ready.size
}
