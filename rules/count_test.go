package rules_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/rules"
)

func TestCountCounts(t *testing.T) {
	logins := &rules.Count{Status: []int{401, 403}, Classes: []int{5}, GRPC: []rules.GRPCCode{16, 7}}
	set := rules.MustNew(rules.Rule{Name: "failed-logins", Key: keyfunc.Header("X-User"), Limit: sluice.PerMinute(5), Count: logins})
	compiled := set.Rules()[0].Count
	for _, tc := range []struct {
		end  rules.Status
		want bool
	}{
		{rules.HTTPStatus(401), true},
		{rules.HTTPStatus(403), true},
		{rules.HTTPStatus(500), true},
		{rules.HTTPStatus(599), true},
		{rules.HTTPStatus(200), false},
		{rules.HTTPStatus(404), false},
		{rules.HTTPStatus(499), false},
		{rules.HTTPStatus(600), false},
		{rules.HTTPStatus(-1), false},
		{rules.GRPCStatus(16), true}, // Unauthenticated
		{rules.GRPCStatus(7), true},  // PermissionDenied
		{rules.GRPCStatus(0), false}, // OK
		{rules.GRPCStatus(401), false},
		{rules.Status{}, true}, // unknown: counts
	} {
		for name, c := range map[string]*rules.Count{"compiled": compiled, "as given": logins} {
			if got := c.Counts(tc.end); got != tc.want {
				t.Errorf("%s: Counts(%v) = %v, want %v", name, tc.end, got, tc.want)
			}
		}
	}
	var all *rules.Count
	if !all.Counts(rules.HTTPStatus(200)) {
		t.Error("a rule without Count must count every request")
	}
	logins.Status[0] = 200 // the set keeps its own copy
	if compiled.Counts(rules.HTTPStatus(200)) || !compiled.Counts(rules.HTTPStatus(401)) {
		t.Error("the set's count changed with the caller's slice")
	}
}

func TestCountValidate(t *testing.T) {
	for _, tc := range []struct {
		count *rules.Count
		want  string
	}{
		{&rules.Count{}, `"r": count: lists no status`},
		{&rules.Count{Status: []int{99}}, `count.status: 99 is not an HTTP status`},
		{&rules.Count{Status: []int{600}}, `count.status: 600 is not an HTTP status`},
		{&rules.Count{Classes: []int{6}}, `count.status: class 6 is not a class`},
		{&rules.Count{GRPC: []rules.GRPCCode{17}}, `count.grpc: 17 is not a gRPC status code`},
	} {
		_, err := rules.New(rules.Rule{Name: "r", Key: keyfunc.Header("X-User"), Limit: sluice.PerMinute(5), Count: tc.count})
		if !errors.Is(err, rules.ErrInvalidRule) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want one containing %q", tc.count, err, tc.want)
		}
	}
}

func TestParseStatus(t *testing.T) {
	for _, tc := range []struct {
		in            string
		status, class int
		err           string
	}{
		{"401", 401, 0, ""},
		{"100", 100, 0, ""},
		{"599", 599, 0, ""},
		{"5xx", 0, 5, ""},
		{"4XX", 0, 4, ""},
		{"1xx", 0, 1, ""},
		{"600", 0, 0, "not an HTTP status"},
		{"99", 0, 0, "not an HTTP status"},
		{"6xx", 0, 0, "unknown status class"},
		{"0xx", 0, 0, "unknown status class"},
		{"forbidden", 0, 0, "unknown status"},
		{"", 0, 0, "unknown status"},
	} {
		status, class, err := rules.ParseStatus(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseStatus(%q) err = %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || status != tc.status || class != tc.class {
			t.Errorf("ParseStatus(%q) = %d, %d, %v", tc.in, status, class, err)
		}
	}
}

func TestParseGRPCCode(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want rules.GRPCCode
		ok   bool
	}{
		{"OK", 0, true},
		{"Unauthenticated", 16, true},
		{"UNAUTHENTICATED", 16, true},
		{"PermissionDenied", 7, true},
		{"PERMISSION_DENIED", 7, true},
		{"CANCELLED", 1, true},
		{"Canceled", 1, true},
		{"unauthenticated", 0, false},
		{"Permission_Denied", 0, false},
		{"NotAuthorized", 0, false},
		{"", 0, false},
	} {
		got, err := rules.ParseGRPCCode(tc.in)
		if (err == nil) != tc.ok || tc.ok && got != tc.want {
			t.Errorf("ParseGRPCCode(%q) = %v, %v", tc.in, got, err)
		}
		if tc.ok && got.String() == "" {
			t.Errorf("%v has no name", got)
		}
	}
	if err := func() error { _, err := rules.ParseGRPCCode("Nope"); return err }(); !strings.Contains(err.Error(), `"Nope"`) {
		t.Errorf("error %v does not name the code", err)
	}
}

func FuzzParseStatus(f *testing.F) {
	for _, s := range []string{"401", "5xx", "6xx", "abc", "-1", "1e3", "Unauthenticated", "PERMISSION_DENIED"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		status, class, err := rules.ParseStatus(s)
		switch {
		case err != nil:
		case class == 0 && (status < 100 || status > 599), class != 0 && (class < 1 || class > 5 || status != 0):
			t.Fatalf("ParseStatus(%q) = %d, %d", s, status, class)
		}
		if code, err := rules.ParseGRPCCode(s); err == nil && code > 16 {
			t.Fatalf("ParseGRPCCode(%q) = %d", s, code)
		}
	})
}
