package lease

import (
	"hash/fnv"
	"hash/maphash"
	"log/slog"
	"strconv"
	"sync"

	"github.com/sluicehq/sluice"
)

// Hot-key detection: per rule (per policy), a count-min sketch of the
// current one-second window and the top keys with exact counts. Memory is
// fixed per rule (cmsDepth × cmsWidth counters and TopK slots) whatever
// the number of distinct keys, and the number of rules tracked is bounded
// by Config.MaxRules.
const (
	cmsDepth = 4
	cmsWidth = 1024
)

type hotTable struct {
	mu       sync.Mutex
	rules    map[*sluice.LeasePolicy]*detector
	maxRules int
	topK     int
	seed     maphash.Seed
	log      *slog.Logger
	obs      Observer
}

type detector struct {
	mu     sync.Mutex
	policy *sluice.LeasePolicy
	window int64 // index of the current window
	cms    [cmsDepth][cmsWidth]uint32
	top    []hotSlot
	t      *hotTable
}

// hotSlot is one tracked key: its exact count in the current window,
// whether it is hot, and, when the rule splits, its sub-buckets.
type hotSlot struct {
	key   string
	count int64
	hot   bool
	sub   []string // sub-bucket keys, made when the key turns hot
	next  int      // the sub-bucket the next request uses
}

func (t *hotTable) init(maxRules, topK int, log *slog.Logger, obs Observer) {
	t.rules = make(map[*sluice.LeasePolicy]*detector)
	t.maxRules, t.topK, t.log, t.obs = maxRules, topK, log, obs
	t.seed = maphash.MakeSeed()
}

// detector returns p's detector, or nil when p detects nothing.
func (t *hotTable) detector(p *sluice.LeasePolicy) *detector {
	if p == nil || p.HotKeys.Threshold <= 0 {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	d := t.rules[p]
	if d == nil {
		if len(t.rules) >= t.maxRules {
			// Rule sets replaced by reloads leave their policies behind:
			// start over rather than grow. Their hot keys cool first, so
			// the hot-keys gauge comes down with them.
			for _, old := range t.rules {
				old.mu.Lock()
				old.coolAll()
				old.mu.Unlock()
			}
			clear(t.rules)
		}
		d = &detector{policy: p, t: t, top: make([]hotSlot, 0, t.topK)}
		t.rules[p] = d
	}
	return d
}

// observeAnswered counts toward hot-key detection the hits of a request
// answered by the memory of refusals, with no backing call: as each would
// have been counted had the request gone to the backing store, so a key
// flooded while over its limit turns hot (and splits) as any other.
func (s *Store) observeAnswered(hits []sluice.Hit) {
	if s.refunder == nil {
		return // nothing is detected over this backing store (see plan)
	}
	var now int64
	read := false
	for i := range hits {
		h := &hits[i]
		pol := s.policy(h)
		if !pol.Active() || h.Shadow || h.MinCost != 0 || h.Peek {
			continue
		}
		d := s.hot.detector(pol)
		if d == nil {
			continue
		}
		if !read {
			now, read = s.now(), true
		}
		d.mu.Lock()
		d.observe(h.Key, h.Units(), now)
		d.mu.Unlock()
	}
}

// forget drops key's slot from p's detector, if any, cooling it.
func (t *hotTable) forget(p *sluice.LeasePolicy, key string) {
	if p == nil {
		return
	}
	t.mu.Lock()
	d := t.rules[p]
	t.mu.Unlock()
	if d == nil {
		return
	}
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
		d.top[last] = hotSlot{}
		d.top = d.top[:last]
		return
	}
}

// observe counts weight units of key's traffic at now (µs) and returns
// the key's slot when it is hot. Called with d.mu held.
func (d *detector) observe(key string, weight, now int64) *hotSlot {
	d.roll(now)
	thr := d.policy.HotKeys.Threshold
	h := maphash.String(d.t.seed, key)
	est := uint32(1<<32 - 1)
	for row := range cmsDepth {
		c := &d.cms[row][(h>>(row*16))%cmsWidth]
		*c += uint32(min(weight, 1<<20))
		est = min(est, *c)
	}
	for i := range d.top {
		s := &d.top[i]
		if s.key == key {
			s.count += weight
			if !s.hot && s.count >= thr {
				d.turn(s, true)
			}
			if s.hot {
				return s
			}
			return nil
		}
	}
	if int64(est) < thr {
		return nil
	}
	// A new heavy hitter: take a free slot or the lightest one, if lighter.
	var s *hotSlot
	if len(d.top) < cap(d.top) {
		d.top = append(d.top, hotSlot{})
		s = &d.top[len(d.top)-1]
	} else {
		for i := range d.top {
			if s == nil || d.top[i].count < s.count {
				s = &d.top[i]
			}
		}
		if s.count >= int64(est) {
			return nil
		}
		if s.hot {
			d.turn(s, false)
		}
	}
	*s = hotSlot{key: key, count: int64(est)}
	d.turn(s, true)
	return s
}

// lookup returns key's slot when it is hot. Called with d.mu held.
func (d *detector) lookup(key string, now int64) *hotSlot {
	d.roll(now)
	for i := range d.top {
		if s := &d.top[i]; s.key == key && s.hot {
			return s
		}
	}
	return nil
}

// roll starts a new window when now has left the current one: keys that
// stayed under the threshold for the whole window cool.
func (d *detector) roll(now int64) {
	w := now / hotWindowMicros
	if w == d.window {
		return
	}
	thr := d.policy.HotKeys.Threshold
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
	d.cms = [cmsDepth][cmsWidth]uint32{}
	d.window = w
}

// coolAll cools every hot slot and forgets them. Called with d.mu held.
func (d *detector) coolAll() {
	for i := range d.top {
		if d.top[i].hot {
			d.turn(&d.top[i], false)
		}
	}
	clear(d.top)
	d.top = d.top[:0]
}

// turn marks s hot or cooled, and says so in the log and to the observer.
func (d *detector) turn(s *hotSlot, hot bool) {
	s.hot = hot
	handling := d.handling()
	if hot && d.policy.HotKeys.Split >= 2 && s.sub == nil {
		s.sub = subKeys(s.key, d.policy.HotKeys.Split)
	}
	msg := "sluice: key cooled"
	if hot {
		msg = "sluice: key turned hot"
	}
	d.t.log.Info(msg, "rule", d.policy.Rule, "key_hash", keyHash(s.key), "handling", handling)
	d.t.obs.HotKey(d.policy.Rule, hot, handling)
}

func (d *detector) handling() string {
	h := d.policy.HotKeys
	switch {
	case h.Lease && h.Split >= 2:
		return "lease+split"
	case h.Lease:
		return "lease"
	case h.Split >= 2:
		return "split"
	}
	return "none"
}

// subKeys returns the n sub-bucket keys of key. They start with a NUL
// byte, which no key built by the rules package starts with (those start
// with a length), so a sub-bucket never shares a key with a bucket.
func subKeys(key string, n int) []string {
	sub := make([]string, n)
	for i := range sub {
		sub[i] = "\x00split" + strconv.Itoa(i) + "\x00" + key
	}
	return sub
}

// splitLimit returns the limit of each of n sub-buckets of a bucket with
// limit l under algorithm alg: rate and capacity divided by n, rounded
// down. ok is false, and the bucket is not split, when the rate or the
// capacity is below n (a sub-bucket of at least 1 each would multiply the
// limit) or a sub-bucket could not hold cost. The sub-buckets of a key
// that turns hot start full, as any new bucket: for one period after the
// split the key may admit up to its capacity once more on top of what its
// bucket had already admitted.
func splitLimit(l sluice.Limit, alg sluice.Algorithm, n int, cost int64) (sub sluice.Limit, ok bool) {
	if n < 2 || l.Rate < int64(n) || l.Capacity() < int64(n) {
		return sluice.Limit{}, false
	}
	sub = sluice.Limit{Rate: l.Rate / int64(n), Period: l.Period}
	if alg == sluice.TokenBucket {
		sub.Burst = l.Capacity() / int64(n)
	}
	if sub.Capacity() < cost || alg.ValidateLimit(sub) != nil {
		return sluice.Limit{}, false
	}
	return sub, true
}

// keyHash names a key in logs without writing it out: bucket keys hold
// identities (addresses, API keys).
func keyHash(key string) string {
	h := fnv.New64a()
	h.Write([]byte(key))
	return strconv.FormatUint(h.Sum64(), 16)
}
