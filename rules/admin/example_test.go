package admin_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/rules/admin"
	"github.com/sluicehq/sluice/store/memstore"
	"github.com/sluicehq/sluice/store/storetest"
)

// An operator looks up why a client is limited, then unblocks it. Mount
// the handler behind your own authentication, on an address clients
// cannot reach.
func ExampleNew() {
	clock := storetest.NewClock(time.Unix(1_700_000_000, 0))
	store := memstore.New(memstore.Config{Clock: clock})
	defer store.Close(context.Background())
	set := rules.MustNew(rules.Rule{Name: "per-ip", Key: keyfunc.ClientIP(), Limit: sluice.PerMinute(2)})

	// The client at 192.0.2.7 spends its limit (here straight in the store).
	hit := sluice.Hit{Key: rules.BucketKey("per-ip", "ip", "192.0.2.7"), Limit: sluice.PerMinute(2), Cost: 2}
	if err := store.Take(context.Background(), []sluice.Hit{hit}, make([]sluice.Result, 1)); err != nil {
		panic(err)
	}

	h, err := admin.New(store, set)
	if err != nil {
		panic(err)
	}
	for _, path := range []string{"/inspect", "/reset"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, strings.NewReader(`{"rule":"per-ip","identity":"::ffff:192.0.2.7"}`)))
		fmt.Print(path, " ", rec.Code, " ", rec.Body.String())
	}
	// Output:
	// /inspect 200 {"buckets":[{"rule":"per-ip","kind":"ip","identity":"192.0.2.7","limit":"2/1m","algorithm":"token_bucket","cost":1,"allowed":false,"remaining":0,"reset_after_ms":60000,"retry_after_ms":30000}]}
	// /reset 200 {"buckets":[{"rule":"per-ip","kind":"ip","identity":"192.0.2.7","limit":"2/1m","algorithm":"token_bucket","cost":1,"allowed":true,"remaining":2,"reset_after_ms":0,"retry_after_ms":0}]}
}
