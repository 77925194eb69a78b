package redisstore

import (
	"context"
	"log/slog"
	"sync"

	"github.com/sluicehq/sluice"
)

// healer reports the keys the take script healed.
type healer struct {
	events sluice.StoreEvents
	log    *slog.Logger
	logged healLog // the keys whose heal was logged
}

func newHealer(cfg Config) *healer { return &healer{events: cfg.Events, log: cfg.Logger} }

// heal reports that the take script found key holding something that is
// not a bucket's state (a key of another type, or a value or log entry that
// does not parse) and replaced it with an empty bucket: to Events, if it
// counts such keys, each time, and to the log once per key, naming the
// endpoint where names it. The key is logged as it is in Redis, which
// names no identity.
func (h *healer) heal(key string, where func(key string) string) {
	e, count := h.events.(sluice.StateHealedEvents)
	first := h.logged.first(key)
	if !count && !first {
		return
	}
	endpoint := where(key)
	if count {
		e.StateHealed(endpoint)
	}
	if first {
		h.log.LogAttrs(context.Background(), slog.LevelWarn,
			"redisstore: a bucket key held something that is not a bucket's state; it was replaced by an empty bucket",
			slog.String("key", key), slog.String("endpoint", endpoint))
	}
}

// maxHealLog bounds the keys a healLog remembers; past it, every heal is
// logged.
const maxHealLog = 1024

// healLog remembers the keys whose heal was logged. The zero value is
// empty and ready to use.
type healLog struct {
	mu   sync.Mutex
	keys map[string]struct{}
}

// first reports whether key's heal is not yet logged, and remembers it.
func (l *healLog) first(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.keys[key]; ok {
		return false
	}
	if l.keys == nil {
		l.keys = make(map[string]struct{})
	}
	if len(l.keys) < maxHealLog {
		l.keys[key] = struct{}{}
	}
	return true
}
