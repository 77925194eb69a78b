package rules

import "time"

// BypassNames returns the names of s's bypass entries, for tests.
func BypassNames(s *Set) []string {
	names := make([]string, len(s.bypass))
	for i := range s.bypass {
		names[i] = s.bypass[i].rule.Name
	}
	return names
}

// WatchTicks is Watch polling on the ticks the test sends.
func WatchTicks(path string, load LoadConfig, cfg WatchConfig, tick <-chan time.Time) (*Watcher, error) {
	return watch(path, load, cfg, tick, nil)
}

// Poll runs one poll, as a tick would.
func (w *Watcher) Poll() { w.poll() }
