package admin_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/rules/admin"
	"github.com/sluicehq/sluice/store/memstore"
	"github.com/sluicehq/sluice/store/storetest"
)

// Inspect shows a penalty's block and the time left in it; a reset lifts
// it at once.
func TestInspectAndResetPenalty(t *testing.T) {
	clock := storetest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	mem := memstore.New(memstore.Config{Clock: clock, SweepInterval: -1})
	t.Cleanup(func() { mem.Close(context.Background()) })
	set := rules.MustNew(rules.Rule{
		Name: "abusive", Key: keyfunc.Header("X-Tenant"), Limit: sluice.PerMinute(2),
		Penalty: &rules.Penalty{Block: 15 * time.Minute},
	})
	takeAs(t, mem, set, "acme", 3) // the third is refused: blocked
	clock.Advance(5 * time.Minute)
	srv := httptest.NewServer(admin.MustNew(mem, set))
	t.Cleanup(srv.Close)
	bucket := func(path string) admin.Bucket {
		t.Helper()
		status, body := post(t, srv, path, `{"rule": "abusive", "identity": "acme"}`)
		var b bucketsBody
		if err := json.Unmarshal([]byte(body), &b); status != http.StatusOK || err != nil || len(b.Buckets) != 1 {
			t.Fatalf("%s: %d %s", path, status, body)
		}
		return b.Buckets[0]
	}
	if got := bucket("/inspect"); !got.Blocked || got.Allowed || got.RetryAfterMS != int64(10*time.Minute/time.Millisecond) {
		t.Fatalf("inspect during the block: %+v, want blocked for 10 more minutes", got)
	}
	bucket("/reset")
	if got := bucket("/inspect"); got.Blocked || !got.Allowed || got.Remaining != 2 {
		t.Fatalf("inspect after a reset: %+v, want the block lifted and the bucket full", got)
	}
	var m rules.Matched
	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set("X-Tenant", "acme")
	if err := set.Resolve(r, &m); err != nil {
		t.Fatal(err)
	}
	res := make([]sluice.Result, len(m.Hits))
	if err := mem.Take(context.Background(), m.Hits, res); err != nil || !res[0].Allowed {
		t.Fatalf("a request after the reset: %+v %v, want allowed", res, err)
	}
}
