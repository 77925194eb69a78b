package obs

import (
	"strings"
	"sync"
	"sync/atomic"
)

// Names maps rule names to the series of each (V), for at most a cap of
// names; the names past it share the series of one other name. Get reads
// without locking: the table is immutable, replaced whole (under mu) when a
// name is first seen. Create it with NewNames.
type Names[V any] struct {
	table     atomic.Pointer[nameTable[V]]
	full      atomic.Bool // the table takes no more names: unknown names are folded
	mu        sync.Mutex
	other     atomic.Pointer[V] // set before full
	max       int               // < 0: no cap
	otherName string
	create    func(name string) V
}

// nameTable maps names to their series; tracked counts the names with
// series of their own.
type nameTable[V any] struct {
	byName  map[string]V
	tracked int
}

// NewNames returns a table of at most max names (negative: no cap) whose
// series create makes; the names past the cap share create(other)'s.
func NewNames[V any](max int, other string, create func(name string) V) *Names[V] {
	n := &Names[V]{max: max, otherName: other, create: create}
	n.table.Store(&nameTable[V]{byName: map[string]V{}})
	return n
}

// Get returns the series of name, adding them while the table has room.
func (n *Names[V]) Get(name string) V {
	if v, ok := n.table.Load().byName[name]; ok {
		return v
	}
	if n.full.Load() {
		return *n.other.Load()
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	t := n.table.Load()
	if v, ok := t.byName[name]; ok {
		return v
	}
	tracked := t.tracked
	var v V
	if n.max < 0 || tracked < n.max {
		v = n.create(name)
		tracked++
	} else {
		v = n.otherLocked()
		// Folded names are remembered too, so that they stay on the
		// lock-free path, but only up to as many again as the cap: past
		// that, any unknown name is folded without a look-up.
		if len(t.byName) >= 2*n.max {
			n.full.Store(true)
			return v
		}
	}
	byName := make(map[string]V, len(t.byName)+1)
	for k, old := range t.byName {
		byName[k] = old
	}
	byName[strings.Clone(name)] = v
	n.table.Store(&nameTable[V]{byName: byName, tracked: tracked})
	return v
}

func (n *Names[V]) otherLocked() V {
	if v := n.other.Load(); v != nil {
		return *v
	}
	v := n.create(n.otherName)
	n.other.Store(&v)
	return v
}
