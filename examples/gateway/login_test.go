package main

import (
	"net/http"
	"strconv"
	"testing"
)

// The file's failed-logins rule: sign-ins that succeed never count; after
// 5 failures the account's next attempt is refused, even with the right
// password, while another account signs in.
func TestRuleFileFailedLogins(t *testing.T) {
	srv, _, _ := newFileServer(t)
	post := func(user, password string) int {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/login", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-User", user)
		req.Header.Set("X-Password", password)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	var got []int
	for _, pw := range []string{"demo", "demo", "demo", "demo", "demo", "guess", "guess", "guess", "guess", "guess", "demo"} {
		got = append(got, post("alice", pw))
	}
	want := []int{200, 200, 200, 200, 200, 401, 401, 401, 401, 401, 429}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("alice's sign-ins: %v, want %v", got, want)
		}
	}
	if code := post("bob", "demo"); code != 200 {
		t.Fatalf("bob: %d", code)
	}
	// The refusal blocked alice's sign-ins for an hour: Retry-After is the
	// time left in it, not the 15 minutes' refill.
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/login", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-User", "alice")
	req.Header.Set("X-Password", "demo")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if ra, err := strconv.Atoi(resp.Header.Get("Retry-After")); resp.StatusCode != http.StatusTooManyRequests || err != nil || ra < 3590 || ra > 3600 {
		t.Fatalf("alice during the block: %d, Retry-After %q, want 429 with about 3600", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}
