package rulefile

import "time"

// WatchTicks is Watch polling on the ticks the test sends.
func WatchTicks(path string, load LoadConfig, cfg WatchConfig, tick <-chan time.Time) (*Watcher, error) {
	return watch(path, load, cfg, tick, nil)
}

// Poll runs one poll, as a tick would.
func (w *Watcher) Poll() { w.poll() }
