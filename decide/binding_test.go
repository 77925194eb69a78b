package decide

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/headers"
)

func TestBinding(t *testing.T) {
	allow := func(rem int64, reset time.Duration) sluice.Result {
		return sluice.Result{Allowed: true, Remaining: rem, ResetAfter: reset}
	}
	deny := func(retry time.Duration) sluice.Result { return sluice.Result{RetryAfter: retry} }
	cases := []struct {
		name     string
		results  []sluice.Result
		admitted bool
		want     int
	}{
		{"fewest remaining", []sluice.Result{allow(5, 0), allow(2, 0), allow(9, 0)}, true, 1},
		{"tie broken by longest reset", []sluice.Result{allow(2, time.Second), allow(2, time.Minute)}, true, 1},
		{"longest retry among deniers", []sluice.Result{deny(time.Second), allow(0, 0), deny(time.Minute)}, false, 2},
		{"unsatisfiable binds first", []sluice.Result{deny(time.Hour), {Unsatisfiable: true}}, false, 1},
		{"only an unexposed rule denied", []sluice.Result{allow(3, 0), allow(1, 0)}, false, 1},
		{"nothing exposed", nil, true, -1},
		{"nothing exposed, refused", nil, false, -1},
	}
	for _, tc := range cases {
		var ps []headers.Policy
		for _, r := range tc.results {
			ps = append(ps, headers.Policy{Name: "p", Result: r})
		}
		if got := binding(ps, tc.admitted); got != tc.want {
			t.Errorf("%s: binding = %d, want %d", tc.name, got, tc.want)
		}
	}
}
