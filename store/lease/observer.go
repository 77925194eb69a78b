package lease

// Observer receives what a lease store does, for metrics. The metrics
// package's LeaseCollector implements it. Implementations must be safe
// for concurrent use and must not block. rule is the policy's
// [sluice.LeasePolicy.Rule], "" when the policy names none.
type Observer interface {
	// LeaseRefilled reports a refill that took taken tokens from the
	// backing store: the leading indicator of the backing's load.
	LeaseRefilled(rule string, taken int64)
	// LeaseReturned reports unused tokens given back to the backing store
	// (on expiry or Close).
	LeaseReturned(rule string, units int64)
	// LeaseLost reports unused tokens that did not go back: the lease's
	// window had passed, the refund failed (never retried), or a caller's
	// refund of a hit served from a lease came after the lease went back.
	LeaseLost(rule string, units int64)
	// LeasedKeys reports how many keys hold lease state, after each sweep.
	LeasedKeys(n int)
	// HotKey reports a key turning hot (hot true) or cooling, and how the
	// rule handles it: "lease", "split", "lease+split" or "none".
	HotKey(rule string, hot bool, handling string)
}

// RefundObserver is an optional interface of an [Observer]: it is told
// of each refund the backing store failed to take (a lease's unused
// tokens, or a caller's refund passed through), counted once and never
// retried. The metrics package's LeaseCollector implements it.
type RefundObserver interface {
	RefundFailed(rule string, refunds int)
}

type nopObserver struct{}

func (nopObserver) LeaseRefilled(string, int64) {}
func (nopObserver) LeaseReturned(string, int64) {}
func (nopObserver) LeaseLost(string, int64)     {}
func (nopObserver) LeasedKeys(int)              {}
func (nopObserver) HotKey(string, bool, string) {}
