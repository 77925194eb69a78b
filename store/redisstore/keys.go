package redisstore

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"hash"
	"hash/maphash"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/sluicehq/sluice"
)

// tagBytes is how much of the HMAC becomes the key: 96 bits, 16 characters
// of unpadded base64url.
const tagBytes = 12

// algorithmTags name each algorithm and its state encoding in keys. A new
// encoding gets a new tag, so old state is never misread.
var algorithmTags = [...]string{
	sluice.TokenBucket:   "tb1",
	sluice.SlidingWindow: "sw1",
	sluice.FixedWindow:   "fw1",
	sluice.SlidingLog:    "sl1",
}

// keyer turns hit keys into Redis keys.
type keyer struct {
	prefix string
	macs   sync.Pool // *keyMAC
	// recent holds the Redis keys of plain hits' keys met again (see
	// named), so a hot key is hashed once rather than on every check.
	recent [recentKeys]recentSlot
	seed   maphash.Seed // picks a key's slot in recent
}

// recentKeys is how many slots keyer.recent has: a key has one, chosen by
// a seeded hash, so a key can only push out the keys that share its slot.
const recentKeys = 64

// maxRecentKey bounds the length of a hit key kept in keyer.recent: each
// slot holds on to its hit key.
const maxRecentKey = 256

// recentSlot is one slot of keyer.recent: the key it holds, and the hash of
// the key that last missed there. A key enters on its second miss in a row
// in its slot, so keys met once (a spread of identities) allocate nothing
// and never push out a key met again and again.
type recentSlot struct {
	named  atomic.Pointer[namedKey]
	missed atomic.Uint64
	_      [48]byte // one slot a cache line: a hot slot is only read
}

// namedKey is a hit key and its Redis key, the latter boxed once for the
// command.
type namedKey struct {
	hit   string
	key   string
	boxed any
}

// keyMAC is a pooled HMAC with buffers for its input and its sum, so
// hashing a key allocates nothing.
type keyMAC struct {
	mac hash.Hash
	buf []byte
	sum []byte
}

func newKeyer(prefix string, secret []byte) *keyer {
	k := &keyer{prefix: prefix, seed: maphash.MakeSeed()}
	k.macs.New = func() any { return &keyMAC{mac: hmac.New(sha256.New, secret)} }
	return k
}

// named returns the Redis key of hit h, as key does, and the same boxed
// for a command. A token-bucket hit without a Group, whose Redis key
// depends on its key alone, is looked up in recent first; the keys met
// again and again are found there without hashing or allocating.
func (k *keyer) named(h *sluice.Hit) (string, any) {
	if h.Algorithm != sluice.TokenBucket || h.Group != "" || len(h.Key) > maxRecentKey {
		key := k.key(h)
		return key, key
	}
	x := maphash.String(k.seed, h.Key)
	s := &k.recent[x%recentKeys]
	if n := s.named.Load(); n != nil && n.hit == h.Key {
		return n.key, n.boxed
	}
	key := k.key(h)
	var boxed any = key
	if s.missed.Swap(x) == x {
		// A copy: the slot outlives the call, and h.Key may be a slice of
		// something larger the caller keeps or reuses.
		s.named.Store(&namedKey{hit: strings.Clone(h.Key), key: key, boxed: boxed})
	}
	return key, boxed
}

// key returns the Redis key of hit h: prefix{hmac}:tag, or, for a hit
// with a Group, prefix{hmac of the group}:hmac:tag, so that every bucket
// of the group has the group's hash tag, hence its cluster slot. For the
// window algorithms the HMAC covers the period too: their stored state (a
// window index, a packed count) means something only for one window
// length, so a rule whose period changes starts new buckets (a calendar
// limit's calendar and zone stand for its period).
func (k *keyer) key(h *sluice.Hit) string {
	m := k.macs.Get().(*keyMAC)
	m.buf = append(m.buf[:0], h.Key...)
	if h.Algorithm != sluice.TokenBucket {
		// The period follows the key in fixed width: HMAC inputs of
		// different keys cannot coincide.
		m.buf = append(m.buf, 0)
		p := h.Limit.PeriodMicros()
		c := h.Limit.Calendar
		if c != sluice.NoCalendar {
			p = -int64(c) // a calendar's windows are not its nominal period's
		}
		m.buf = binary.BigEndian.AppendUint64(m.buf, uint64(p))
		if c != sluice.NoCalendar {
			// A calendar count means something only in its zone's
			// periods: the zone's name, then its length, so inputs
			// still read back one way only (from the end).
			z := h.Limit.Location().String()
			m.buf = append(m.buf, z...)
			m.buf = binary.BigEndian.AppendUint32(m.buf, uint32(len(z)))
		}
	}
	m.mac.Reset()
	_, _ = m.mac.Write(m.buf)
	m.sum = m.mac.Sum(m.sum[:0])

	tag := algorithmTags[h.Algorithm]
	enc := base64.RawURLEncoding.EncodedLen(tagBytes)
	n := len(k.prefix) + 1 + enc + 2 + len(tag)
	if h.Group != "" {
		n += enc + 1
	}
	b := make([]byte, 0, n)
	b = append(b, k.prefix...)
	b = append(b, '{')
	if h.Group != "" {
		// A grouped key has two MACs, so it never equals an ungrouped
		// one; a group's tag equal to some bucket's tag would only put
		// them in one slot.
		var gsum [sha256.Size]byte
		m.mac.Reset()
		_, _ = m.mac.Write(groupMark)
		_, _ = m.mac.Write([]byte(h.Group))
		b = base64.RawURLEncoding.AppendEncode(b, m.mac.Sum(gsum[:0])[:tagBytes])
		b = append(b, '}', ':')
		b = base64.RawURLEncoding.AppendEncode(b, m.sum[:tagBytes])
		b = append(b, ':')
	} else {
		b = base64.RawURLEncoding.AppendEncode(b, m.sum[:tagBytes])
		b = append(b, '}', ':')
	}
	b = append(b, tag...)
	if cap(m.buf) <= 4096 { // a huge key's buffer is not kept
		k.macs.Put(m)
	}
	return string(b)
}

// groupMark starts the HMAC input of a group's hash tag.
var groupMark = []byte("\x00sluice group\x00")
