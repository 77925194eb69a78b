package lease

import (
	"math"

	"github.com/sluicehq/sluice"
)

// A receipt of a hit served from a lease has a negative Seq (the backing
// stores' sequence numbers are never negative); Mark is the lease's
// generation. Seq names the hit's tokens: the low placeBits bits are the
// place of its first token in the key's count of tokens served
// (entry.served, modulo 2^placeBits), the bits above them its cost
// (capped at costMask). So a refund gives back only tokens this receipt
// took, each once (see [givenLog.redeem]), whatever Receipt.Taken says.
const (
	placeBits = 40
	placeMask = 1<<placeBits - 1
	costMask  = 1<<(63-placeBits) - 1
)

// localReceipt returns the receipt of a hit served from the lease of
// generation gen: taken tokens, the last of them at place end-1.
func localReceipt(taken, gen, end int64) sluice.Receipt {
	place := (end - taken) & placeMask
	return sluice.Receipt{Taken: taken, Mark: gen, Seq: math.MinInt64 | min(taken, costMask)<<placeBits | place}
}

// isLocal reports whether rc is the receipt of a hit served from a lease.
func isLocal(rc sluice.Receipt) bool { return rc.Seq < 0 }

// givenSpan is how many of a key's latest served tokens a local refund can
// give back: the tokens of a hit served longer ago than that are counted
// as lost when refunded. A power of two.
const givenSpan = 1024

// givenRing has a bit per token among the last givenSpan served, by place
// modulo givenSpan: set once the token has been given back.
type givenRing [givenSpan / 64]uint64

// givenLog remembers which of a key's latest served tokens local refunds
// gave back. The entry's mutex guards it.
type givenLog struct {
	ring  *givenRing // nil until a local refund
	swept int64      // served as of the last local refund: ring's slots of later places are stale
}

// redeem gives back up to units of the tokens local receipt rc names, each
// token once, when served tokens have been served from the key's leases
// so far: back is how many go back into the lease (the caller adds
// them), lost how many were served too long ago to tell (counted as lost,
// never given back). A receipt whose tokens were given back already, or
// that names tokens not served yet, gives back nothing; so does the part
// of a refund beyond the receipt's own cost, whatever its Taken says.
func (g *givenLog) redeem(served int64, rc sluice.Receipt, units int64) (back, lost int64) {
	cost := int64(uint64(rc.Seq)>>placeBits) & costMask
	place := served - (served-rc.Seq)&placeMask // the latest place at or before served with these low bits
	if cost == 0 || served-place < cost {
		return 0, 0
	}
	units = min(units, cost)
	if g.ring == nil {
		g.ring = new(givenRing) // no token was given back before: every bit clear
	} else {
		// Clear the slots of the places served since the last refund:
		// they held the bits of places givenSpan earlier.
		for p := max(g.swept, served-givenSpan); p < served; p++ {
			g.ring[p/64%(givenSpan/64)] &^= 1 << (p % 64)
		}
	}
	g.swept = served
	old := min(cost, max(0, served-givenSpan-place)) // served too long ago to tell
	for p := place + old; p < place+cost && back < units; p++ {
		w, bit := &g.ring[p/64%(givenSpan/64)], uint64(1)<<(p%64)
		if *w&bit == 0 {
			*w |= bit
			back++
		}
	}
	return back, min(units-back, old)
}
