package chikey

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/sluicehq/sluice/internal/ident"
	"github.com/sluicehq/sluice/keyfunc"
)

// Endpoint returns the Key, of kind "endpoint", whose identity is the method and the full chi route
// pattern of the request, e.g. "GET /api/users/{id}" (the format of
// keyfunc.Endpoint), never the raw path. Requests no route matches (404,
// 405, methods chi does not know) get the keyfunc.Unmatched key, such as
// "GET <unmatched>".
//
// The pattern is looked up in the routing tree with chi's Routes.Find, so
// the key is the same wherever the limiter is installed: around the router
// (limit(router)), globally with router.Use, in the middleware stack of a
// mounted sub-router (where chi's own RoutePattern and r.Pattern hold only
// the mount point, "/api/*"), or on one route with With. The lookup uses
// the top-level router of the request, taken from chi's routing context
// when one exists, else router; router may be nil when the limiter always
// runs inside chi. Patterns are formatted the way chi formats
// RoutePattern, so "/users/{id}/" and "/users/{id}" give the same key, as
// they give the same r.Pattern. Where Routes.Find stops early, at the mount
// point of a sub-router ("/api" for a sub-router mounted there), the lookup
// continues in the sub-router as routing does, so the key agrees with the
// pattern chi routes the request by. To do that it indexes
// the mount points of a router on first use; like chi itself, it expects
// all routes to be registered before the first request is served.
//
// The lookup uses the path and method routing uses: chi.Context.RoutePath
// and RouteMethod overrides, as set by chi's CleanPath and GetHead
// middlewares, are honoured when they are set in the top-level router's
// stack before the limiter runs. Inside a mounted sub-router the original
// request path is looked up from the top.
//
// Without a routing context and with a nil router, the KeyFunc fails with an
// error wrapping keyfunc.ErrNotRouted (and so keyfunc.ErrNoKey).
func Endpoint(router chi.Routes) keyfunc.Key {
	var stubs stubCache
	return keyfunc.New("endpoint", func(r *http.Request) (string, error) {
		routes := router
		method := r.Method
		routePath := ""
		if rctx := chi.RouteContext(r.Context()); rctx != nil {
			if rctx.Routes != nil {
				routes = rctx.Routes
			}
			if rctx.RouteMethod != "" {
				method = rctx.RouteMethod
			}
			if len(rctx.RoutePatterns) == 0 {
				// Before routing, RoutePath is a top-level override;
				// after a mount, it is the remaining sub-path.
				routePath = rctx.RoutePath
			}
		}
		if routes == nil {
			return "", errNoRouter
		}
		if routePath == "" {
			routePath = requestPath(r)
		}
		rc := chi.NewRouteContext()
		pattern := routes.Find(rc, method, routePath)
		pattern = stubs.get(routes).resolve(rc, method, pattern)
		return ident.EndpointKey(method, normalize(pattern)), nil
	})
}

// errNoRouter is a set-up mistake, as keyfunc.Endpoint before routing is:
// it wraps keyfunc.ErrNotRouted.
var errNoRouter = fmt.Errorf("%w; chikey.Endpoint has no chi router to look it up in: pass the router, or install the limiter inside it", keyfunc.ErrNotRouted)

// requestPath is the path chi routes a request by.
func requestPath(r *http.Request) string {
	if r.URL == nil {
		return "/"
	}
	p := r.URL.RawPath
	if p == "" {
		p = r.URL.Path
	}
	if p == "" {
		p = "/"
	}
	return p
}

// normalize formats a pattern from Routes.Find the way chi's
// Context.RoutePattern formats the pattern of a routed request.
func normalize(pattern string) string {
	if pattern == "" {
		return ""
	}
	for strings.Contains(pattern, "/*/") {
		pattern = strings.ReplaceAll(pattern, "/*/", "/")
	}
	if pattern != "/" {
		pattern = strings.TrimSuffix(pattern, "//")
		pattern = strings.TrimSuffix(pattern, "/")
	}
	return pattern
}
