package redisstore

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/store/storetest"
)

type eventLog struct {
	mu     sync.Mutex
	events []string
}

func (e *eventLog) BreakerChanged(endpoint string, from, to sluice.BreakerState) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.events = append(e.events, fmt.Sprintf("%s %v->%v", endpoint, from, to))
}

func (e *eventLog) ScriptReloaded(endpoint string) {}

var (
	errDown     = &sluice.StoreError{Op: "t", Kind: sluice.ErrUnavailable}
	errTimeout  = &sluice.StoreError{Op: "t", Kind: sluice.ErrTimeout, Ambiguous: true}
	errCorrupt  = &sluice.StoreError{Op: "t", Kind: sluice.ErrCorruptState}
	errCanceled = &sluice.StoreError{Op: "t", Kind: sluice.ErrUnavailable, Ambiguous: true, Err: context.Canceled}
)

func TestBreakerTransitions(t *testing.T) {
	clock := storetest.NewClock(time.Unix(1_800_000_000, 0))
	events := &eventLog{}
	b := newBreaker("r1", BreakerConfig{Failures: 3, OpenFor: time.Second, Clock: clock}, events)

	call := func(err error) (ok bool) {
		ok, probe, _ := b.allow()
		if ok {
			b.record(probe, err)
		}
		return ok
	}
	// A success and an error reply from Redis reset the count; a call the
	// caller cancelled changes nothing.
	for _, err := range []error{errDown, errDown, nil, errDown, errCorrupt, errTimeout, errCanceled, errDown} {
		if !call(err) {
			t.Fatalf("closed breaker refused a call")
		}
	}
	if b.State() != sluice.BreakerClosed {
		t.Fatalf("opened after 2 consecutive failures: %v", b.State())
	}
	call(errTimeout) // third consecutive: timeout, (cancelled), down, timeout
	if b.State() != sluice.BreakerOpen {
		t.Fatalf("state %v after 3 consecutive failures, want open", b.State())
	}
	// Open: nothing goes through, and the retry hint counts down.
	ok, _, retry := b.allow()
	if ok || retry != time.Second {
		t.Fatalf("open breaker: ok=%v retry=%v", ok, retry)
	}
	clock.Advance(400 * time.Millisecond)
	if ok, _, retry := b.allow(); ok || retry != 600*time.Millisecond {
		t.Fatalf("open breaker after 400ms: ok=%v retry=%v", ok, retry)
	}
	// Half-open: exactly one probe.
	clock.Advance(600 * time.Millisecond)
	ok, probe, _ := b.allow()
	if !ok || !probe || b.State() != sluice.BreakerHalfOpen {
		t.Fatalf("after OpenFor: ok=%v probe=%v state=%v", ok, probe, b.State())
	}
	if ok, _, _ := b.allow(); ok {
		t.Fatal("a half-open breaker let a second call through while the probe was out")
	}
	b.record(true, errTimeout) // the probe fails: open again for a full OpenFor
	if ok, _, retry := b.allow(); ok || retry != time.Second || b.State() != sluice.BreakerOpen {
		t.Fatalf("after a failed probe: ok=%v retry=%v state=%v", ok, retry, b.State())
	}
	clock.Advance(time.Second)
	ok, probe, _ = b.allow()
	b.record(probe, nil) // the probe succeeds
	if !ok || b.State() != sluice.BreakerClosed {
		t.Fatalf("after a good probe: state %v", b.State())
	}
	// A call that started before the breaker opened cannot close it.
	for range 3 {
		call(errDown)
	}
	b.record(false, nil)
	if b.State() != sluice.BreakerOpen {
		t.Fatalf("a late success closed an open breaker")
	}
	want := []string{"r1 closed->open", "r1 open->half_open", "r1 half_open->open", "r1 open->half_open", "r1 half_open->closed", "r1 closed->open"}
	if fmt.Sprint(events.events) != fmt.Sprint(want) {
		t.Fatalf("events %v, want %v", events.events, want)
	}
}

// A request's probe whose outcome is never recorded (its call failed
// unsent, in a way that says nothing about Redis) does not keep the
// breaker half-open for good: after OpenFor another request probes.
func TestBreakerLostProbe(t *testing.T) {
	clock := storetest.NewClock(time.Unix(1_800_000_000, 0))
	b := newBreaker("r1", BreakerConfig{Failures: 1, OpenFor: time.Second, Clock: clock}, nil)
	b.record(false, errDown)
	clock.Advance(time.Second)
	if ok, probe, _ := b.allow(); !ok || !probe {
		t.Fatalf("after OpenFor: ok=%v probe=%v, want the probe", ok, probe)
	}
	// Its outcome is never recorded.
	clock.Advance(999 * time.Millisecond)
	if ok, _, _ := b.allow(); ok {
		t.Fatal("a second probe went out while the first was out for less than OpenFor")
	}
	clock.Advance(time.Millisecond)
	ok, probe, _ := b.allow()
	if !ok || !probe {
		t.Fatalf("OpenFor after a probe that never reported: ok=%v probe=%v, want another probe", ok, probe)
	}
	b.record(probe, nil)
	if b.State() != sluice.BreakerClosed {
		t.Fatalf("state %v after a good probe, want closed", b.State())
	}
}

// A breaker probed in the background lets no request through until its
// probe succeeds.
func TestBreakerBackgroundProbe(t *testing.T) {
	clock := storetest.NewClock(time.Unix(1_800_000_000, 0))
	events := &eventLog{}
	b := newBreaker("r1", BreakerConfig{Failures: 3, OpenFor: time.Second, Clock: clock}, events)
	b.background = true

	call := func(err error) (ok bool) {
		ok, probe, _ := b.allow()
		if probe {
			t.Fatal("a request was made the probe")
		}
		if ok {
			b.record(false, err)
		}
		return ok
	}
	// A success and an error reply from Redis reset the count; a call the
	// caller cancelled changes nothing.
	for _, err := range []error{errDown, errDown, nil, errDown, errCorrupt, errTimeout, errCanceled, errDown} {
		if !call(err) {
			t.Fatalf("closed breaker refused a call")
		}
	}
	if b.State() != sluice.BreakerClosed {
		t.Fatalf("opened after 2 consecutive failures: %v", b.State())
	}
	if due, wait := b.probeDue(); due || wait != 0 {
		t.Fatalf("closed breaker: probe due=%v wait=%v", due, wait)
	}
	call(errTimeout) // third consecutive: timeout, (cancelled), down, timeout
	if b.State() != sluice.BreakerOpen {
		t.Fatalf("state %v after 3 consecutive failures, want open", b.State())
	}
	select {
	case <-b.opened:
	default:
		t.Fatal("opening did not signal the prober")
	}
	// Open: nothing goes through, and the retry hint counts down.
	ok, _, retry := b.allow()
	if ok || retry != time.Second {
		t.Fatalf("open breaker: ok=%v retry=%v", ok, retry)
	}
	clock.Advance(400 * time.Millisecond)
	if ok, _, retry := b.allow(); ok || retry != 600*time.Millisecond {
		t.Fatalf("open breaker after 400ms: ok=%v retry=%v", ok, retry)
	}
	if due, wait := b.probeDue(); due || wait != 600*time.Millisecond {
		t.Fatalf("probe before OpenFor: due=%v wait=%v", due, wait)
	}
	// After OpenFor: requests still fail at once; the background probe
	// runs, one at a time.
	clock.Advance(600 * time.Millisecond)
	if ok, _, retry := b.allow(); ok || retry != time.Second {
		t.Fatalf("after OpenFor, no probe yet: ok=%v retry=%v", ok, retry)
	}
	if due, _ := b.probeDue(); !due || b.State() != sluice.BreakerHalfOpen {
		t.Fatalf("after OpenFor: probe due=%v state=%v", due, b.State())
	}
	if due, _ := b.probeDue(); due {
		t.Fatal("a second probe while the first is out")
	}
	if ok, _, _ := b.allow(); ok {
		t.Fatal("a half-open breaker let a request through")
	}
	b.probed(errTimeout) // the probe fails: open again for a full OpenFor
	if ok, _, retry := b.allow(); ok || retry != time.Second || b.State() != sluice.BreakerOpen {
		t.Fatalf("after a failed probe: ok=%v retry=%v state=%v", ok, retry, b.State())
	}
	clock.Advance(time.Second)
	if due, _ := b.probeDue(); !due {
		t.Fatal("no probe after the second OpenFor")
	}
	b.probed(nil) // the probe succeeds
	if ok, _, _ := b.allow(); !ok || b.State() != sluice.BreakerClosed {
		t.Fatalf("after a good probe: state %v", b.State())
	}
	// A call that started before the breaker opened cannot close it.
	for range 3 {
		call(errDown)
	}
	b.record(false, nil)
	if b.State() != sluice.BreakerOpen {
		t.Fatalf("a late success closed an open breaker")
	}
	want := []string{"r1 closed->open", "r1 open->half_open", "r1 half_open->open", "r1 open->half_open", "r1 half_open->closed", "r1 closed->open"}
	if fmt.Sprint(events.events) != fmt.Sprint(want) {
		t.Fatalf("events %v, want %v", events.events, want)
	}
}

func TestBreakerDisabled(t *testing.T) {
	if b := newBreaker("x", BreakerConfig{Disabled: true}, nil); b != nil {
		t.Fatal("a disabled breaker exists")
	}
	b := newBreaker("x", BreakerConfig{}, nil)
	if b.failures != defaultBreakerFailures || b.openFor != defaultBreakerOpenFor || b.probeFor != defaultProbeTimeout {
		t.Fatalf("defaults: %d %v %v", b.failures, b.openFor, b.probeFor)
	}
}
