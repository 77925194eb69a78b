package sluice_test

import (
	"context"
	"fmt"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/store/memstore"
	"github.com/sluicehq/sluice/store/storetest"
)

// A quota per customer counted in calendar months of Berlin time: at the
// limit, the customer waits until the 1st's midnight, whatever the month's
// length. The clock is a test clock; in production leave Clock and
// WithWaitClock out.
func ExamplePerCalendar() {
	berlin, err := time.LoadLocation("Europe/Berlin") // the zone database, or import time/tzdata
	if err != nil {
		panic(err)
	}
	clock := storetest.NewClock(time.Date(2026, 3, 31, 23, 0, 0, 0, berlin))
	store := memstore.New(memstore.Config{Clock: clock})
	defer store.Close(context.Background())
	quota := sluice.MustNewLimiter(store, sluice.PerCalendar(3, sluice.Month, berlin), sluice.WithWaitClock(clock))
	ctx := context.Background()
	for range 4 {
		r, err := quota.Allow(ctx, "acme")
		if err != nil {
			panic(err)
		}
		fmt.Printf("allowed=%-5v remaining=%d retry-after=%v\n", r.Allowed, r.Remaining, r.RetryAfter)
	}
	u, err := quota.Usage(ctx, "acme")
	if err != nil {
		panic(err)
	}
	fmt.Println(u.Limit, "used", u.Used, "until", u.PeriodEnd.Format(time.DateTime))
	clock.Set(u.PeriodEnd)
	r, _ := quota.Allow(ctx, "acme")
	fmt.Println("in April: allowed", r.Allowed, "remaining", r.Remaining)
	// Output:
	// allowed=true  remaining=2 retry-after=0s
	// allowed=true  remaining=1 retry-after=0s
	// allowed=true  remaining=0 retry-after=0s
	// allowed=false remaining=0 retry-after=1h0m0s
	// 3/month Europe/Berlin used 3 until 2026-04-01 00:00:00
	// in April: allowed true remaining 2
}
