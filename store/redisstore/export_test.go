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
func WaitStartupCheck(s *Store) { s.wg.Wait() }
