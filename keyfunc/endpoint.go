package keyfunc

import (
	"net/http"
	"path"
	"strings"

	"github.com/sluicehq/sluice/internal/ident"
)

// Unmatched stands in for the route pattern of a request no route matches
// (404, 405, or a redirect to a canonical path): its endpoint key is the
// method, a space and Unmatched, "<unmatched>", e.g. "GET <unmatched>". All
// such requests share one bucket per method instead of one per URL.
const Unmatched = ident.Unmatched

// Endpoint returns the Key, of kind "endpoint", whose identity is the route pattern the request was
// routed by, read from r.Pattern.
//
// The identity is the method, a space and the pattern, e.g.
// "GET /users/{id}"; a request no route matches gives the method and
// [Unmatched]. A pattern that names a method, as http.ServeMux patterns may
// ("GET /users/{id}"), contributes only its host and path: the request's
// own method is used, so HEAD requests served by a GET pattern are keyed
// "HEAD /users/{id}". A method other than GET, HEAD, POST, PUT, PATCH,
// DELETE, CONNECT, OPTIONS, TRACE and QUERY that the pattern does not name
// becomes "<other>", so a client cannot mint a fresh bucket per invented
// method; neither "<other>" nor "<unmatched>" is a valid method or pattern,
// so they cannot collide with real ones.
//
// r.Pattern is set by http.ServeMux, and by chi, just before the matched
// handler runs, so Endpoint works only in middleware that runs after
// routing: wrapped around a single handler (mux.Handle("GET /x",
// limit(h)), chi's r.With(limit)). Before routing (chi's r.Use, or
// around a whole mux) r.Pattern is empty and the KeyFunc fails with
// [ErrNotRouted]; there use [EndpointFromMux] or chikey.Endpoint, which
// look the pattern up. Inside
// the middleware of a mounted chi sub-router r.Pattern is only the mount
// point ("/api/*"); chikey.Endpoint handles that case too.
func Endpoint() Key {
	return Key{kind: endpointKind, form: endpointForm, fn: func(r *http.Request) (string, error) {
		if r.Pattern == "" {
			return "", ErrNotRouted
		}
		return ident.EndpointKey(r.Method, r.Pattern), nil
	}}
}

// ErrNotRouted reports a key that needs the request's route pattern, run
// before routing has found it: [Endpoint] in middleware installed in front
// of the router (chi's r.Use, or around a whole http.ServeMux), where
// r.Pattern is still empty. The request is not at fault, the server's
// set-up is: the middleware's default error handler answers 500 and logs
// the fix, which is to key with [EndpointFromMux] or chikey.Endpoint,
// which look the pattern up, or to install the limiter after routing
// (chi's r.With, or around one handler). Errors wrapping it also wrap [ErrNoKey], never [ErrMissing]:
// no rule skips such a request.
var ErrNotRouted error = notRoutedError{}

// notRoutedError is the type of ErrNotRouted.
type notRoutedError struct{}

func (notRoutedError) Error() string {
	return "keyfunc: no key: the request is not routed yet, so its route pattern is unknown (r.Pattern is empty): " +
		"key with keyfunc.EndpointFromMux(mux) or chikey.Endpoint(router), or install the limiter after routing"
}

func (notRoutedError) Is(target error) bool { return target == ErrNoKey }

// endpointKind is the kind of the endpoint keys.
const endpointKind = "endpoint"

// EndpointFromMux returns the Key, of kind "endpoint", whose identity is the pattern of the route
// that mux selects for the request (in the format of [Endpoint]), found
// with mux.Handler. It works wherever the limiter is installed, also in
// front of the mux (limit(mux)) where routing has not happened yet, and
// gives the same key there as after routing. Requests the mux would answer
// with 404 or 405 get the [Unmatched] key.
//
// Pass the mux that receives the request's path as it is at the limiter;
// behind http.StripPrefix that is the inner mux. EndpointFromMux panics if
// mux is nil.
func EndpointFromMux(mux *http.ServeMux) Key {
	if mux == nil {
		panic("keyfunc: EndpointFromMux: nil mux")
	}
	return Key{kind: endpointKind, form: endpointForm, fn: func(r *http.Request) (string, error) {
		if r.URL == nil {
			return "", noKey("request has no URL")
		}
		_, pattern := mux.Handler(r)
		if r.Method == http.MethodConnect && isSlashRedirect(r, pattern) {
			// For a CONNECT request that ServeMux redirects to add a
			// trailing slash, Handler reports the redirect target,
			// which is the request's own path: never key on that.
			pattern = ""
		}
		return ident.EndpointKey(r.Method, pattern), nil
	}}
}

// isSlashRedirect reports whether pattern is the request path with a slash
// appended, which is what ServeMux.Handler reports for the trailing-slash
// redirect of a CONNECT request.
func isSlashRedirect(r *http.Request, pattern string) bool {
	if pattern == "" || !strings.HasSuffix(pattern, "/") {
		return false
	}
	p := r.URL.Path
	return pattern == p+"/" || pattern == cleanPath(p)+"/"
}

// cleanPath is net/http's canonical form of a request path: rooted, with
// . and .. elements resolved, keeping a trailing slash.
func cleanPath(p string) string {
	if p == "" {
		return "/"
	}
	if p[0] != '/' {
		p = "/" + p
	}
	np := path.Clean(p)
	if p[len(p)-1] == '/' && np != "/" {
		np += "/"
	}
	return np
}
