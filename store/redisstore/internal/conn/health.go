package conn

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// Health is what the store knows of whether one Redis endpoint can be
// reached, kept by whoever talks to it: the endpoint's ready connections
// (see Set), or the store for a Redis Cluster master, which it reaches
// through a go-redis pool. The endpoint is
//
//   - down when a dial or a connection's set-up failed: calls fail at
//     once, unsent, until a dial or a set-up succeeds;
//   - suspect when a call found its connection closed or reset by the
//     server, which may have closed that connection only (a restart of
//     its clients, CLIENT KILL) or be gone (a crash): calls fail at once,
//     unsent and uncounted by the breaker, until a dial or a set-up, made
//     at once, tells which;
//   - up otherwise.
//
// Its keeper dials it (see DialProbe) while it is down or suspect, and
// says what it found. It is safe for concurrent use; the zero value is up.
type Health struct {
	fault atomic.Pointer[Fault] // nil while up
	mu    sync.Mutex
	worse chan struct{} // closed when it goes down or suspect; nil until Worse makes one
}

// A Fault is why an endpoint is not up.
type Fault struct {
	Err error // the failure that found it so
	// Suspect is set when a connection was found closed by the server and
	// nothing has told since whether the endpoint can be reached;
	// otherwise it is down.
	Suspect bool
	// Name names the endpoint when it was found down: a Sentinel-managed
	// primary's address, which changes when another is promoted.
	Name string
}

// Fault returns why the endpoint is not up, or nil while it is.
func (h *Health) Fault() *Fault { return h.fault.Load() }

// Down returns the error that found the endpoint down, or nil when it is
// up or only suspect.
func (h *Health) Down() error {
	if f := h.fault.Load(); f != nil && !f.Suspect {
		return f.Err
	}
	return nil
}

// SetUp records that the endpoint was reached: it is up.
func (h *Health) SetUp() { h.fault.Store(nil) }

// SetDown records that the endpoint, named name, cannot be reached: err
// says why. It reports whether it was not down before (up or suspect).
func (h *Health) SetDown(err error, name string) (first bool) {
	old := h.fault.Swap(&Fault{Err: err, Name: name})
	h.signal()
	return old == nil || old.Suspect
}

// SetSuspect records that a call found the server gone (err closed its
// connection), unless the endpoint is down already. It reports whether it
// did.
func (h *Health) SetSuspect(err error) bool {
	f := &Fault{Err: err, Suspect: true}
	for {
		old := h.fault.Load()
		if old != nil && !old.Suspect {
			return false // known already
		}
		if h.fault.CompareAndSwap(old, f) {
			h.signal()
			return true
		}
	}
}

// Worse returns a channel closed when the endpoint next goes down or
// suspect: it wakes those waiting for a connection it cannot give.
func (h *Health) Worse() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.worse == nil {
		h.worse = make(chan struct{})
	}
	return h.worse
}

// signal wakes those that Worse handed a channel.
func (h *Health) signal() {
	h.mu.Lock()
	if h.worse != nil {
		close(h.worse)
		h.worse = nil
	}
	h.mu.Unlock()
}

// DialProbe returns a check that the endpoint at addr can be reached: a
// dial with opt's dialer, closed at once. Nil when opt has no dialer. It
// dials past go-redis's pool: a dial error there would count towards the
// pool's own dial breaker, which then refuses to dial for a second, and
// the pool retries a refused dial DialerRetries times, DialerRetryTimeout
// apart, which would leave the endpoint down or suspect that long.
func DialProbe(opt *redis.Options, addr string) func(context.Context) error {
	if opt.Dialer == nil {
		return nil
	}
	network, dialer := opt.Network, opt.Dialer
	return func(ctx context.Context) error {
		c, err := dialer(ctx, network, addr)
		if err == nil {
			c.Close()
		}
		return err
	}
}
