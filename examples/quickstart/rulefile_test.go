package quickstart

import (
	"net/http"
	"testing"

	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/rules/rulefile"
)

// The rule file the rulefile quickstart watches loads with the LoadConfig
// the quickstart gives it.
func TestRuleFileLoads(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /items/{id}", func(http.ResponseWriter, *http.Request) {})
	set, err := rulefile.LoadFile("rulefile/rules.yaml", rulefile.LoadConfig{Endpoint: keyfunc.EndpointFromMux(mux)})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range set.Rules() {
		names = append(names, r.Name)
	}
	if len(names) != 3 {
		t.Fatalf("rules %v, want per-ip, per-api-key and item-lookups", names)
	}
}
