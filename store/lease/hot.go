package lease

import (
	"hash/fnv"
	"log/slog"
	"strconv"
	"sync/atomic"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/store/lease/internal/hotkey"
)

// Hot-key detection is per rule (per policy): package hotkey counts each
// key's traffic in fixed memory per rule, and Config.MaxRules bounds the
// rules tracked. The traffic counted is the hits that reach the backing
// store, weighted by the tokens each call stands for (a refill by all it
// leased), and the hits refused in process by a remembered refusal or
// denial, which stand for calls the backing store would have refused.
// This file holds the policies' side: what a key turning hot or cooling
// does, and which sub-bucket a split key's request uses.

// detector is a rule's hot-key detector. It keeps a split with each hot
// key of a rule that splits them.
type detector = hotkey.Detector[*split]

// hotKeys holds the hot-key detectors of the rules (policies) seen, and
// says when a key turns hot or cools.
type hotKeys struct {
	rules *hotkey.Table[*sluice.LeasePolicy, *split]
	topK  int
	log   *slog.Logger
	obs   Observer
}

// newHotKeys returns the detectors of up to maxRules rules, each tracking
// topK keys, which tell log and obs of the keys turning hot and cooling.
func newHotKeys(maxRules, topK int, log *slog.Logger, obs Observer) *hotKeys {
	hk := &hotKeys{topK: topK, log: log, obs: obs}
	hk.rules = hotkey.NewTable(maxRules, hk.config)
	return hk
}

// detector returns p's detector, or nil when p detects nothing.
func (hk *hotKeys) detector(p *sluice.LeasePolicy) *detector {
	if p == nil || p.HotKeys.Threshold <= 0 {
		return nil
	}
	return hk.rules.Get(p)
}

// lookup returns pol's detector (nil when pol detects nothing), whether
// key is hot under it at now, and the sub-buckets of a hot key pol
// splits.
func (hk *hotKeys) lookup(pol *sluice.LeasePolicy, key string, now int64) (d *detector, sp *split, hot bool) {
	d = hk.detector(pol)
	if d == nil {
		return nil, nil, false
	}
	sp, hot = d.Lookup(key, now)
	return d, sp, hot
}

// config returns the configuration of p's detector: a key turning hot or
// cooling is logged and told to the observer, and a key of a rule that
// splits gets its sub-bucket keys when it turns hot.
func (hk *hotKeys) config(p *sluice.LeasePolicy) hotkey.Config[*split] {
	handling := handlingOf(p)
	return hotkey.Config[*split]{
		Threshold: p.HotKeys.Threshold,
		TopK:      hk.topK,
		OnHot: func(key string) *split {
			hk.turned(p, key, true, handling)
			if p.HotKeys.Split < 2 {
				return nil
			}
			return &split{keys: subKeys(key, p.HotKeys.Split)}
		},
		OnCool: func(key string) { hk.turned(p, key, false, handling) },
	}
}

// turned says in the log and to the observer that key turned hot or
// cooled.
func (hk *hotKeys) turned(p *sluice.LeasePolicy, key string, hot bool, handling string) {
	msg := "sluice: key cooled"
	if hot {
		msg = "sluice: key turned hot"
	}
	hk.log.Info(msg, "rule", p.Rule, "key_hash", keyHash(key), "handling", handling)
	hk.obs.HotKey(p.Rule, hot, handling)
}

// handlingOf names what p does with a hot key, for logs and metrics.
func handlingOf(p *sluice.LeasePolicy) string {
	h := p.HotKeys
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

// split is a hot key's sub-buckets, made when it turns hot: their keys
// and the number of requests that used one, which chooses the next.
type split struct {
	keys []string
	used atomic.Uint64
}

// next returns the hit of cost c on the sub-bucket h uses, taking the
// next one in turn, or false when h's limit cannot be split that way
// (see [splitLimit]).
func (sp *split) next(h *sluice.Hit, c int64) (sluice.Hit, bool) {
	sub, ok := splitLimit(h.Limit, h.Algorithm, len(sp.keys), c)
	if !ok {
		return sluice.Hit{}, false
	}
	n := sp.used.Add(1) - 1
	sh := *h
	sh.Key, sh.Limit = sp.keys[n%uint64(len(sp.keys))], sub
	return sh, true
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
	sub = sluice.Limit{Rate: l.Rate / int64(n), Period: l.Period, Calendar: l.Calendar, Zone: l.Zone}
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
