// Package hotkey finds the hot keys of a stream of weighted key
// observations: per one-second window, a count-min sketch estimates every
// key's count, and the heaviest keys (top K) are tracked with exact
// counts. A key whose count reaches the threshold in a window is hot
// until a whole window passes under it. Memory is fixed per detector
// (depth × width counters and K slots) however many distinct keys pass.
package hotkey

import (
	"hash/maphash"
	"sync"
	"time"
)

// The count-min sketch's size.
const (
	depth = 4
	width = 1024
)

// window is the length of a detection window, in µs.
const window = int64(time.Second / time.Microsecond)

// Config configures a [Detector] that keeps a V with each hot key.
type Config[V any] struct {
	// Threshold is the count, in a window, from which a key is hot. At
	// least 1.
	Threshold int64
	// TopK is how many keys are tracked exactly. At least 1.
	TopK int
	// OnHot is called when a key turns hot; what it returns is kept with
	// the key while it stays hot ([Detector.Lookup]). Nil keeps a zero V.
	OnHot func(key string) V
	// OnCool is called when a hot key cools or is forgotten. May be nil.
	OnCool func(key string)
}

// Detector detects hot keys. OnHot and OnCool are called with its lock
// held: they must not call it. It is safe for concurrent use.
type Detector[V any] struct {
	mu     sync.Mutex
	cfg    Config[V]
	seed   maphash.Seed
	window int64 // index of the current window
	cms    [depth][width]uint32
	top    []slot[V]
}

// slot is one tracked key: its exact count in the current window, whether
// it is hot, and the value kept with it while it is.
type slot[V any] struct {
	key   string
	count int64
	hot   bool
	val   V
}

// New returns a detector configured by cfg.
func New[V any](cfg Config[V]) *Detector[V] {
	return &Detector[V]{cfg: cfg, seed: maphash.MakeSeed(), top: make([]slot[V], 0, cfg.TopK)}
}

// Observe counts weight units of key's traffic at now (µs) and reports
// whether key is hot, and whether it turned hot with this observation.
// It allocates nothing, unless OnHot does.
func (d *Detector[V]) Observe(key string, weight, now int64) (hot, changed bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.roll(now)
	est := d.count(key, weight)
	thr := d.cfg.Threshold
	for i := range d.top {
		s := &d.top[i]
		if s.key != key {
			continue
		}
		s.count += weight
		if !s.hot && s.count >= thr {
			d.turn(s, true)
			return true, true
		}
		return s.hot, false
	}
	if est < thr {
		return false, false
	}
	s := d.place(est)
	if s == nil {
		return false, false
	}
	*s = slot[V]{key: key, count: est}
	d.turn(s, true)
	return true, true
}

// count adds weight to key's counters in the sketch and returns its
// estimate: the least of them.
func (d *Detector[V]) count(key string, weight int64) int64 {
	h := maphash.String(d.seed, key)
	est := uint32(1<<32 - 1)
	for row := range depth {
		c := &d.cms[row][(h>>(row*16))%width]
		*c += uint32(min(weight, 1<<20))
		est = min(est, *c)
	}
	return int64(est)
}

// place returns the slot for a new heavy hitter of estimate est: a free
// one, or the lightest one if lighter (cooling its key), or nil.
func (d *Detector[V]) place(est int64) *slot[V] {
	if len(d.top) < cap(d.top) {
		d.top = append(d.top, slot[V]{})
		return &d.top[len(d.top)-1]
	}
	var s *slot[V]
	for i := range d.top {
		if s == nil || d.top[i].count < s.count {
			s = &d.top[i]
		}
	}
	if s == nil || s.count >= est {
		return nil
	}
	if s.hot {
		d.turn(s, false)
	}
	return s
}

// Lookup returns what is kept with key and true when key is hot at now
// (µs), without counting it.
func (d *Detector[V]) Lookup(key string, now int64) (v V, hot bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.roll(now)
	for i := range d.top {
		if s := &d.top[i]; s.key == key && s.hot {
			return s.val, true
		}
	}
	return v, false
}

// Forget drops key's slot, if any, cooling it.
func (d *Detector[V]) Forget(key string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i := range d.top {
		if d.top[i].key != key {
			continue
		}
		if d.top[i].hot {
			d.turn(&d.top[i], false)
		}
		last := len(d.top) - 1
		d.top[i] = d.top[last]
		d.top[last] = slot[V]{}
		d.top = d.top[:last]
		return
	}
}

// CoolAll cools every hot key and forgets them all.
func (d *Detector[V]) CoolAll() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i := range d.top {
		if d.top[i].hot {
			d.turn(&d.top[i], false)
		}
	}
	clear(d.top)
	d.top = d.top[:0]
}

// Len returns how many keys are tracked.
func (d *Detector[V]) Len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.top)
}

// roll starts a new window when now has left the current one: keys that
// stayed under the threshold for the whole window cool. Called with d.mu
// held.
func (d *Detector[V]) roll(now int64) {
	w := now / window
	if w == d.window {
		return
	}
	thr := d.cfg.Threshold
	kept := d.top[:0]
	for i := range d.top {
		s := d.top[i]
		if w == d.window+1 && s.count >= thr {
			s.count = 0
			kept = append(kept, s)
			continue
		}
		if s.hot {
			d.turn(&s, false)
		}
	}
	clear(d.top[len(kept):])
	d.top = kept
	d.cms = [depth][width]uint32{}
	d.window = w
}

// turn marks s hot or cooled and calls OnHot or OnCool. Called with d.mu
// held.
func (d *Detector[V]) turn(s *slot[V], hot bool) {
	s.hot = hot
	if !hot {
		var zero V
		s.val = zero
		if d.cfg.OnCool != nil {
			d.cfg.OnCool(s.key)
		}
		return
	}
	if d.cfg.OnHot != nil {
		s.val = d.cfg.OnHot(s.key)
	}
}
