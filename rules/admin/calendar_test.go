package admin_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
	_ "time/tzdata" // the zone below, whatever the machine has

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/rules/admin"
	"github.com/sluicehq/sluice/store/memstore"
	"github.com/sluicehq/sluice/store/storetest"
)

// Inspect reports a calendar limit's usage: the limit in force (an
// override's), what is left, what the period used, and when it ends.
func TestInspectReportsCalendarUsage(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	clock := storetest.NewClock(time.Date(2026, 3, 29, 18, 0, 0, 0, berlin)) // a 23-hour day
	mem := memstore.New(memstore.Config{Clock: clock, SweepInterval: -1})
	t.Cleanup(func() { mem.Close(context.Background()) })
	set := rules.MustNew(rules.Rule{
		Name: "daily", Key: keyfunc.Header("X-Tenant"), Limit: sluice.PerCalendar(100, sluice.Day, berlin), Algorithm: sluice.FixedWindow,
		Overrides: []rules.Override{{Identities: []string{"acme"}, Limit: sluice.PerCalendar(500, sluice.Day, berlin)}},
	})
	takeAs(t, mem, set, "acme", 7)
	srv := httptest.NewServer(admin.MustNew(mem, set, admin.WithClock(clock)))
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		tenant, limit   string
		used, remaining int64
		resetMS         int64
	}{
		{"acme", "500/day Europe/Berlin", 7, 493, int64(6 * time.Hour / time.Millisecond)},
		{"initech", "100/day Europe/Berlin", 0, 100, 0}, // nothing counted: whole already
	} {
		status, body := post(t, srv, "/inspect", `{"rule": "daily", "identity": "`+tc.tenant+`"}`)
		var b bucketsBody
		if err := json.Unmarshal([]byte(body), &b); status != http.StatusOK || err != nil || len(b.Buckets) != 1 {
			t.Fatalf("%s: %d %s", tc.tenant, status, body)
		}
		got := b.Buckets[0]
		if got.Limit != tc.limit || got.Used == nil || *got.Used != tc.used || got.Remaining != tc.remaining || got.ResetAfterMS != tc.resetMS ||
			got.PeriodStart != "2026-03-29T00:00:00+01:00" || got.PeriodEnd != "2026-03-30T00:00:00+02:00" {
			t.Errorf("%s: %s, want limit %s, used %d, remaining %d, reset after %d ms, the period of 29 March", tc.tenant, body, tc.limit, tc.used, tc.remaining, tc.resetMS)
		}
	}
	if _, err := admin.New(mem, set, admin.WithClock(nil)); err == nil {
		t.Error("a nil clock accepted")
	}
}

// takeAs decides n requests of tenant (X-Tenant) on set's rules in store.
func takeAs(t *testing.T, store sluice.Store, set *rules.Set, tenant string, n int) {
	t.Helper()
	var m rules.Matched
	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set("X-Tenant", tenant)
	for range n {
		if err := set.Resolve(r, &m); err != nil {
			t.Fatal(err)
		}
		if err := store.Take(context.Background(), m.Hits, make([]sluice.Result, len(m.Hits))); err != nil {
			t.Fatal(err)
		}
	}
}
