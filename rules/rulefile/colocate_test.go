package rulefile_test

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/rules/rulefile"
)

// A request under colocate.yaml's rules: the user's two buckets carry the
// user as their group, the IP bucket none.
func TestColocateFile(t *testing.T) {
	set, err := rulefile.LoadFile("../../testdata/rulefiles/valid/colocate.yaml", testConfig())
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest("GET", "/items", nil)
	r = r.WithContext(context.WithValue(r.Context(), userKey{}, "alice"))
	r.Pattern = "GET /items" // as a ServeMux sets it
	var m rules.Matched
	if err := set.Resolve(r, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Hits) != 3 || m.Hits[0].Group == "" || m.Hits[0].Group != m.Hits[1].Group || m.Hits[2].Group != "" {
		t.Fatalf("hits %+v: want the user's two in one group, the IP's in none", m.Hits)
	}
}
