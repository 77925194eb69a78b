package main

import "net/http"

// login stands in for a real sign-in: the account is X-User, and its
// password, sent as X-Password, is "demo". A wrong one gets 401, which the
// failed-logins rule of rules.yaml counts; a right one gets 200, which it
// gives back.
func login(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("X-User") == "" || r.Header.Get("X-Password") != "demo" {
		http.Error(w, "wrong user or password", http.StatusUnauthorized)
		return
	}
	reply(map[string]string{"user": r.Header.Get("X-User"), "signed_in": "true"})(w, r)
}
