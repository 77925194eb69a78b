package rules_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/rules"
)

func TestColocate(t *testing.T) {
	user := constKey("u42")
	set := rules.MustNew(
		rules.Rule{Name: "per-user", Key: user, KeyKind: "user", Limit: sluice.PerMinute(10), Colocate: user},
		rules.Rule{Name: "per-user-endpoint", Key: constKey("u42 GET /x"), KeyKind: "user_endpoint", Limit: sluice.PerMinute(5), Colocate: user},
		rules.Rule{Name: "per-ip", Key: constKey("192.0.2.1"), KeyKind: "ip", Limit: sluice.PerMinute(100)},
	)
	var m rules.Matched
	if err := set.Resolve(httptest.NewRequest(http.MethodGet, "/x", nil), &m); err != nil {
		t.Fatal(err)
	}
	if m.Hits[0].Group != "u42" || m.Hits[1].Group != "u42" || m.Hits[2].Group != "" {
		t.Fatalf("groups %q %q %q, want u42 u42 and none", m.Hits[0].Group, m.Hits[1].Group, m.Hits[2].Group)
	}

	noUser := rules.MustNew(rules.Rule{Name: "per-user", Key: user, KeyKind: "user", Limit: sluice.PerMinute(10),
		Colocate: func(*http.Request) (string, error) { return "", keyfunc.ErrNoKey }})
	if err := noUser.Resolve(httptest.NewRequest(http.MethodGet, "/", nil), &m); !errors.Is(err, keyfunc.ErrNoKey) || !strings.Contains(err.Error(), "colocate") {
		t.Fatalf("err = %v, want ErrNoKey naming colocate", err)
	}

	for _, kind := range []string{"ip", "endpoint", "global"} {
		r := rules.Rule{Name: "r", Key: user, KeyKind: kind, Limit: sluice.PerMinute(10), Colocate: user}
		err := r.Validate()
		if !errors.Is(err, rules.ErrInvalidRule) || !strings.Contains(err.Error(), "colocate") || !strings.Contains(err.Error(), kind) {
			t.Errorf("colocated %s rule: %v, want ErrInvalidRule naming colocate and %s", kind, err, kind)
		}
	}
}
