package lease

import "github.com/sluicehq/sluice"

// unleased reports whether h's bucket passes through unleased whatever
// its limit: a hit with a penalty ([sluice.Hit.Block]), whose block the
// backing store keeps and every instance must see at once (leased tokens
// would be spent through it); its refusals are then remembered as any
// backing store's, so a block costs the backing store one call per
// instance per Config.RememberRefusals. A concurrency hit
// ([sluice.Hit.Concurrency]) passes through too: its slots are held in
// the backing store, where every instance sees them.
func unleased(h *sluice.Hit) bool { return h.Block > 0 || h.Concurrency }
