package redisstore

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"hash"
	"io"
	"sync"

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
	macs   sync.Pool
}

func newKeyer(prefix string, secret []byte) *keyer {
	k := &keyer{prefix: prefix}
	k.macs.New = func() any { return hmac.New(sha256.New, secret) }
	return k
}

// key returns the Redis key of hit h: prefix{hmac}:tag. For the window
// algorithms the HMAC covers the period too: their stored state (a window
// index, a packed count) means something only for one window length, so a
// rule whose period changes starts new buckets.
func (k *keyer) key(h *sluice.Hit) string {
	mac := k.macs.Get().(hash.Hash)
	mac.Reset()
	_, _ = io.WriteString(mac, h.Key)
	if h.Algorithm != sluice.TokenBucket {
		var p [9]byte
		p[0] = 0 // separates the period from the key: HMAC inputs differ in length
		binary.BigEndian.PutUint64(p[1:], uint64(h.Limit.PeriodMicros()))
		_, _ = mac.Write(p[:])
	}
	var sumBuf [sha256.Size]byte
	sum := mac.Sum(sumBuf[:0])
	k.macs.Put(mac)

	tag := algorithmTags[h.Algorithm]
	n := len(k.prefix) + 1 + base64.RawURLEncoding.EncodedLen(tagBytes) + 2 + len(tag)
	b := make([]byte, 0, n)
	b = append(b, k.prefix...)
	b = append(b, '{')
	b = base64.RawURLEncoding.AppendEncode(b, sum[:tagBytes])
	b = append(b, '}', ':')
	b = append(b, tag...)
	return string(b)
}
