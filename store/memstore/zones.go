package memstore

import (
	"sync"
	"time"
)

// zoneIDs numbers the time zones of calendar limits by name, for bucket
// keys: a calendar bucket's count means something only in its zone's
// periods, so a rule whose zone changes starts new buckets, as one whose
// calendar or period changes does. The numbers live as long as the
// process; there are a few hundred zone names.
var zoneIDs struct {
	sync.RWMutex
	ids map[string]int64
}

// zoneID returns the number of the zone named name, giving it the next
// one the first time.
func zoneID(loc *time.Location) int64 {
	name := loc.String()
	zoneIDs.RLock()
	id, ok := zoneIDs.ids[name]
	zoneIDs.RUnlock()
	if ok {
		return id
	}
	zoneIDs.Lock()
	defer zoneIDs.Unlock()
	if id, ok := zoneIDs.ids[name]; ok {
		return id
	}
	if zoneIDs.ids == nil {
		zoneIDs.ids = make(map[string]int64)
	}
	id = int64(len(zoneIDs.ids)) + 1
	zoneIDs.ids[name] = id
	return id
}
