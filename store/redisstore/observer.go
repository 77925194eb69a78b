package redisstore

import "github.com/sluicehq/sluice"

// Observer returns Config.Events when it is also a [sluice.Observer] (the
// metrics package's Collector is), else nil. It makes the store a
// [sluice.ObserverSource]: the middleware reports its decisions there too
// unless it is given an observer of its own, so a collector set as
// Config.Events sees the decisions, the store calls and the breaker alike.
func (s *Store) Observer() sluice.Observer {
	o, _ := s.events.(sluice.Observer)
	return o
}
