package redisstore

import (
	"strings"

	"github.com/sluicehq/sluice"
)

// Redis Cluster spreads keys over hashSlots slots: a key's slot is the
// CRC16 (XMODEM) of its hash tag (the part between the first '{' and the
// next '}', when not empty) or of the whole key, modulo hashSlots. The
// store computes it itself, without I/O, to group a request's hits by slot.
const hashSlots = 16384

// slotOf returns the cluster hash slot of key.
func slotOf(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	return int(crc16(key)) % hashSlots
}

// crc16 is CRC-16/XMODEM (polynomial 0x1021, initial value 0), the checksum
// Redis Cluster hashes keys with.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc = crc<<8 ^ crc16Table[byte(crc>>8)^s[i]]
	}
	return crc
}

var crc16Table = func() (t [256]uint16) {
	for i := range t {
		c := uint16(i) << 8
		for range 8 {
			if c&0x8000 != 0 {
				c = c<<1 ^ 0x1021
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return t
}()

// slotGroup is the part of a request whose hits share a slot, which one
// script call decides on Redis Cluster and one refund gives back.
type slotGroup struct {
	idx  []int // the hits' positions in the request
	hits []sluice.Hit
	out  []sluice.Result
	req  request
	slot int
	// enforcing: the group has a hit that can refuse the request (neither
	// a shadow hit, a peek nor a forced hit). burst is then how many
	// times the scarcest such hit's cost fits in its bucket's capacity.
	enforcing bool
	burst     int64
}

// groupBySlot splits a request's hits, whose Redis keys are keys, by slot,
// in the order their slots first appear.
func (cl *cluster) groupBySlot(keys []string, hits []sluice.Hit) []*slotGroup {
	var groups []*slotGroup
	bySlot := make(map[int]*slotGroup, 4)
	for i, k := range keys {
		slot := slotOf(k)
		g := bySlot[slot]
		if g == nil {
			g = newSlotGroup(slot)
			bySlot[slot] = g
			groups = append(groups, g)
		}
		g.add(i, &hits[i])
	}
	for _, g := range groups {
		g.out = make([]sluice.Result, len(g.hits))
		g.req = cl.scripts.newRequest(g.hits, g.out)
	}
	return groups
}

// newSlotGroup returns the empty group of slot.
func newSlotGroup(slot int) *slotGroup {
	return &slotGroup{slot: slot, burst: -1}
}

// add adds hit h, the request's hit i, to g.
func (g *slotGroup) add(i int, h *sluice.Hit) {
	g.idx = append(g.idx, i)
	g.hits = append(g.hits, *h)
	if !enforcing(h) {
		return
	}
	g.enforcing = true
	if b := h.Limit.Capacity() / minUnits(h); g.burst < 0 || b < g.burst {
		g.burst = b
	}
}

// enforcing reports whether h can refuse its request.
func enforcing(h *sluice.Hit) bool { return !h.Shadow && !h.Peek && !h.Force }

// minUnits is the least h can take and pass: a partial hit's MinCost, else
// its cost.
func minUnits(h *sluice.Hit) int64 {
	if h.MinCost > 0 {
		return h.MinCost
	}
	return h.Units()
}
