package sluicegrpc_test

import (
	"testing"

	"github.com/sluicehq/sluice/rules/rulefile"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestRuleFile: a rule file's keys and match work on calls as on
// requests: routes list full method names, and every call is a POST.
func TestRuleFile(t *testing.T) {
	set, err := rulefile.Parse("rules.yaml", []byte(`
rules:
  - name: checks
    key: ip
    limit: {rate: 1, per: 1m}
    match:
      methods: [POST]
      routes: ["/grpc.health.v1.Health/Check"]
  - name: per-key
    key: api_key
    limit: {rate: 1, per: 1m}
`), rulefile.LoadConfig{})
	if err != nil {
		t.Fatal(err)
	}
	store, _ := fakeStore(t)
	srv := serve(t, newLimiter(t, store, set), nil)
	for i, s := range []step{
		{peer: "203.0.113.7:1"},
		{peer: "203.0.113.7:1", want: codes.ResourceExhausted},
		{peer: "203.0.113.7:1", method: "list"}, // not a route of the rule
		{peer: "203.0.113.8:1", md: []string{"x-api-key", "k"}},
		{peer: "203.0.113.9:1", md: []string{"x-api-key", "k"}, want: codes.ResourceExhausted},
	} {
		if got := status.Code(s.do(t, srv.client(s.peer))); got != s.want {
			t.Fatalf("step %d (%+v): %v, want %v", i, s, got, s.want)
		}
	}
}
