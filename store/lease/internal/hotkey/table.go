package hotkey

import "sync"

// Table holds a detector per rule, of comparable type K, at most max at
// once: when a new rule would exceed that, detection restarts, every
// detector's hot keys cooling first (rule sets replaced by reloads leave
// their rules behind). It is safe for concurrent use.
type Table[K comparable, V any] struct {
	mu     sync.RWMutex
	m      map[K]*Detector[V]
	max    int
	config func(K) Config[V]
}

// NewTable returns a table of at most max detectors (at least 1), the
// detector of rule k configured by config(k).
func NewTable[K comparable, V any](max int, config func(K) Config[V]) *Table[K, V] {
	return &Table[K, V]{m: make(map[K]*Detector[V]), max: max, config: config}
}

// Get returns k's detector, made when k has none.
func (t *Table[K, V]) Get(k K) *Detector[V] {
	t.mu.RLock()
	d := t.m[k]
	t.mu.RUnlock()
	if d != nil {
		return d
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if d := t.m[k]; d != nil {
		return d
	}
	if len(t.m) >= t.max {
		for _, old := range t.m {
			old.CoolAll()
		}
		clear(t.m)
	}
	d = New(t.config(k))
	t.m[k] = d
	return d
}

// Forget drops key from k's detector, if any, cooling it.
func (t *Table[K, V]) Forget(k K, key string) {
	t.mu.RLock()
	d := t.m[k]
	t.mu.RUnlock()
	if d != nil {
		d.Forget(key)
	}
}

// Len returns how many rules have a detector and how many keys they
// track in all.
func (t *Table[K, V]) Len() (rules, keys int) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	for _, d := range t.m {
		keys += d.Len()
	}
	return len(t.m), keys
}
