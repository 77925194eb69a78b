package ident

import (
	"net/http"
	"strings"
)

// Unmatched stands in for the route pattern of a request no route matches
// (404, 405, or a redirect to a canonical path): its endpoint key is the
// method, a space and Unmatched, e.g. "GET <unmatched>". All such requests
// share one bucket per method instead of one per URL.
const Unmatched = "<unmatched>"

// OtherMethod replaces, in endpoint keys, a request method that is not one
// of GET, HEAD, POST, PUT, PATCH, DELETE, CONNECT, OPTIONS, TRACE and QUERY
// and is not named by the matched pattern, so a client cannot mint a fresh
// bucket per invented method. Neither it nor Unmatched is a valid method or
// pattern, so they cannot collide with real ones.
const OtherMethod = "<other>"

// EndpointKey returns the endpoint key for a request method and the route
// pattern that matched it: the method, a space and the pattern, e.g.
// "GET /users/{id}". An empty pattern means no route matched and gives
// method + " " + [Unmatched]. A pattern that names a method, as
// http.ServeMux patterns may ("GET /users/{id}"), contributes only its host
// and path; the request's own method is used, so HEAD requests served by a
// GET pattern are keyed "HEAD /users/{id}". Methods are folded by
// [KeyMethod].
func EndpointKey(method, pattern string) string {
	patMethod, rest := splitPattern(pattern)
	method = KeyMethod(method, patMethod)
	if rest == "" {
		return method + " " + Unmatched
	}
	return method + " " + rest
}

// splitPattern splits a ServeMux pattern "[METHOD ][HOST]/[PATH]" into its
// method, if any, and the rest, the way ServeMux parses it.
func splitPattern(pattern string) (method, rest string) {
	if i := strings.IndexAny(pattern, " \t"); i >= 0 {
		return pattern[:i], strings.TrimLeft(pattern[i+1:], " \t")
	}
	return "", pattern
}

// KeyMethod folds a request method into a bounded set: "" is GET, the
// standard methods and patternMethod (a custom method the matched pattern
// names) stay as they are, and any other method is [OtherMethod].
func KeyMethod(method, patternMethod string) string {
	switch method {
	case "":
		return http.MethodGet // net/http: an empty method means GET
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut,
		http.MethodPatch, http.MethodDelete, http.MethodConnect,
		http.MethodOptions, http.MethodTrace, "QUERY":
		return method
	case patternMethod:
		return method // a custom method a registered pattern names
	}
	return OtherMethod
}
