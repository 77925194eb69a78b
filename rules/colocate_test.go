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

func kindKey(kind, id string) keyfunc.Key {
	return keyfunc.New(kind, func(*http.Request) (string, error) { return id, nil })
}

func TestColocate(t *testing.T) {
	user := kindKey("user", "u42")
	set := rules.MustNew(
		rules.Rule{Name: "per-user", Key: user, Limit: sluice.PerMinute(10), Colocate: user},
		rules.Rule{Name: "per-user-endpoint", Key: kindKey("user_endpoint", "u42 GET /x"), Limit: sluice.PerMinute(5), Colocate: user},
		rules.Rule{Name: "per-ip", Key: kindKey("ip", "192.0.2.1"), Limit: sluice.PerMinute(100)},
	)
	var m rules.Matched
	if err := set.Resolve(httptest.NewRequest(http.MethodGet, "/x", nil), &m); err != nil {
		t.Fatal(err)
	}
	if m.Hits[0].Group != "u42" || m.Hits[1].Group != "u42" || m.Hits[2].Group != "" {
		t.Fatalf("groups %q %q %q, want u42 u42 and none", m.Hits[0].Group, m.Hits[1].Group, m.Hits[2].Group)
	}

	broken := rules.MustNew(rules.Rule{Name: "per-user", Key: user, Limit: sluice.PerMinute(10),
		Colocate: keyfunc.New("user", func(*http.Request) (string, error) { return "", errors.New("session store down") })})
	if err := broken.Resolve(httptest.NewRequest(http.MethodGet, "/", nil), &m); err == nil || !strings.Contains(err.Error(), "colocate") {
		t.Fatalf("err = %v, want an error naming colocate", err)
	}

	for _, tc := range []struct{ key, by string }{
		{"ip", "user"}, {"endpoint", "user"}, {"global", "user"}, // such buckets must spread
		{"user", "global"}, {"user", "ip"}, {"user", "endpoint"}, // nor may a user's join them
	} {
		r := rules.Rule{Name: "r", Key: kindKey(tc.key, "x"), Limit: sluice.PerMinute(10), Colocate: kindKey(tc.by, "x")}
		err := r.Validate()
		if !errors.Is(err, rules.ErrInvalidRule) || !strings.Contains(err.Error(), "colocate") {
			t.Errorf("%s rule colocated by %s: %v, want ErrInvalidRule naming colocate", tc.key, tc.by, err)
		}
	}
}
