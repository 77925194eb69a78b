package sluice_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/sluicehq/sluice"
)

// customer is what an application's own middleware has loaded.
type customer struct{ RatePerMinute int64 }

// loadCustomer stands for the application's look-up.
func loadCustomer(*http.Request) customer { return customer{RatePerMinute: 6000} }

// An application's middleware in front of the limiter sets the limit of
// the customer's plan for a rule; the limiter applies it, capped by the
// rule's MaxLimit.
func ExampleWithLimit() {
	plans := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			customer := loadCustomer(r)
			ctx := sluice.WithLimit(r.Context(), "per-tenant", sluice.PerMinute(customer.RatePerMinute))
			next.ServeHTTP(w, r.WithContext(ctx))
		})
	}
	h := plans(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		l, ok := sluice.LimitFrom(r.Context(), "per-tenant")
		fmt.Println(l, ok)
	}))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	// Output: 6000/1m true
}
