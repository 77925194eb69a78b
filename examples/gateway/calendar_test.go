package main

import (
	"net/http"
	"strings"
	"testing"
)

// The file's daily quota per tenant: 1,000 a day, 5,000 for acme (its
// override), in the headers beside the other rules; a request without
// X-Tenant is not counted by it.
func TestRuleFileCalendarQuota(t *testing.T) {
	srv, _, _ := newFileServer(t)
	for tenant, want := range map[string]string{"initech": `"per-tenant-daily";q=1000;w=`, "acme": `"per-tenant-daily";q=5000;w=`} {
		resp := get(t, srv, "/items", "X-Tenant", tenant)
		if p := resp.Header.Get("RateLimit-Policy"); resp.StatusCode != http.StatusOK || !strings.Contains(p, want) {
			t.Errorf("%s: %d, RateLimit-Policy %q, want %s…", tenant, resp.StatusCode, p, want)
		}
	}
	if p := get(t, srv, "/items").Header.Get("RateLimit-Policy"); strings.Contains(p, "per-tenant-daily") {
		t.Errorf("without X-Tenant: RateLimit-Policy %q names the daily quota", p)
	}
}
