package sluice_test

import (
	"context"
	"fmt"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/store/memstore"
	"github.com/sluicehq/sluice/store/storetest"
)

// A job limited per tenant, without HTTP: each tenant may export twice per
// second. Allow answers at once; Wait sleeps for exactly the RetryAfter the
// store gives. The clock here is a test clock that Wait steps forward, so
// the example takes no real time; in production leave Clock and
// WithWaitClock out.
func ExampleLimiter() {
	clock := storetest.NewClock(time.Unix(1_700_000_000, 0))
	store := memstore.New(memstore.Config{Clock: clock})
	defer store.Close(context.Background())
	exports, err := sluice.NewLimiter(store, sluice.PerSecond(2), sluice.WithWaitClock(clock))
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	for _, tenant := range []string{"acme", "acme", "acme", "globex"} {
		r, err := exports.Allow(ctx, "export:"+tenant)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%-6s allowed=%-5v remaining=%d retry-after=%v\n", tenant, r.Allowed, r.Remaining, r.RetryAfter)
	}
	start := clock.Now()
	if err := exports.Wait(ctx, "export:acme"); err != nil {
		panic(err)
	}
	fmt.Println("acme waited", clock.Now().Sub(start))
	// Output:
	// acme   allowed=true  remaining=1 retry-after=0s
	// acme   allowed=true  remaining=0 retry-after=0s
	// acme   allowed=false remaining=0 retry-after=500ms
	// globex allowed=true  remaining=1 retry-after=0s
	// acme waited 500ms
}

// Peek reads a bucket without consuming; Reset makes it full again (the
// store must implement sluice.Resetter, as memstore does).
func ExampleLimiter_Reset() {
	store := memstore.New(memstore.Config{})
	defer store.Close(context.Background())
	logins := sluice.MustNewLimiter(store, sluice.PerHour(3))
	ctx := context.Background()
	for range 3 {
		logins.Allow(ctx, "login:alice")
	}
	r, _ := logins.Peek(ctx, "login:alice")
	fmt.Println("before reset: remaining", r.Remaining, "allowed", r.Allowed)
	if err := logins.Reset(ctx, "login:alice"); err != nil {
		panic(err)
	}
	r, _ = logins.Peek(ctx, "login:alice")
	fmt.Println("after reset: remaining", r.Remaining, "allowed", r.Allowed)
	// Output:
	// before reset: remaining 0 allowed false
	// after reset: remaining 3 allowed true
}

// Sign-ins limited to 3 a minute per user, with a penalty: a user refused
// twice within a minute is shut out for 15 minutes, whatever the bucket
// holds, until the block ends or Reset lifts it. The clock is a test clock
// moved by hand; in production leave Clock out.
func ExampleWithPenalty() {
	clock := storetest.NewClock(time.Unix(1_700_000_000, 0))
	store := memstore.New(memstore.Config{Clock: clock})
	defer store.Close(context.Background())
	logins, err := sluice.NewLimiter(store, sluice.PerMinute(3), sluice.WithPenalty(15*time.Minute, 2))
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	show := func(what string) {
		r, err := logins.Allow(ctx, "login:alice")
		if err != nil {
			panic(err)
		}
		fmt.Printf("%-13s allowed=%-5v blocked=%-5v started=%-5v retry-after=%v\n", what, r.Allowed, r.Blocked, r.BlockStarted, r.RetryAfter)
	}
	for i := range 5 {
		show(fmt.Sprint("attempt ", i+1))
	}
	clock.Advance(5 * time.Minute) // the bucket is full again; the block runs on
	show("5 min later")
	if err := logins.Reset(ctx, "login:alice"); err != nil {
		panic(err)
	}
	show("after Reset")
	// Output:
	// attempt 1     allowed=true  blocked=false started=false retry-after=0s
	// attempt 2     allowed=true  blocked=false started=false retry-after=0s
	// attempt 3     allowed=true  blocked=false started=false retry-after=0s
	// attempt 4     allowed=false blocked=false started=false retry-after=20s
	// attempt 5     allowed=false blocked=true  started=true  retry-after=15m0s
	// 5 min later   allowed=false blocked=true  started=false retry-after=10m0s
	// after Reset   allowed=true  blocked=false started=false retry-after=0s
}
