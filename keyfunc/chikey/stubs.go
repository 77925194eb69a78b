package chikey

import (
	"reflect"
	"strings"
	"sync"

	"github.com/go-chi/chi/v5"
)

// Mounting a sub-router at "/api" registers, besides "/api/*", two stub
// routes "/api" and "/api/" that continue routing in the sub-router with
// the path "/". chi's Routes.Find reports such a stub as the matched
// pattern without asking the sub-router, so for "/api" it answers "/api"
// even when the sub-router has no "/" route and chi serves a 404. stubIndex
// lets Endpoint finish those lookups the way routing does.

// stubIndex lists the mount stubs of one router tree.
type stubIndex struct {
	// last holds the level patterns ("/api", "/api/") that are stubs
	// somewhere in the tree: a cheap filter before building a path key.
	last map[string]bool
	// stubs maps a stub's path through the tree, the level patterns chi
	// records in Context.RoutePatterns joined by "\x00", to the stub.
	stubs map[string]stub
}

type stub struct {
	sub chi.Routes // the mounted sub-router routing continues in
	// real holds methods with a real handler registered on the stub's own
	// pattern, which chi serves instead of continuing in the sub-router.
	real map[string]bool
}

// resolve corrects a pattern found by Routes.Find with route context rc.
func (ix *stubIndex) resolve(rc *chi.Context, method, pattern string) string {
	n := len(rc.RoutePatterns)
	if pattern == "" || n == 0 || !ix.last[rc.RoutePatterns[n-1]] {
		return pattern
	}
	s, ok := ix.stubs[strings.Join(rc.RoutePatterns, "\x00")]
	if !ok || s.real[method] || s.real["*"] {
		return pattern
	}
	sub := s.sub.Find(chi.NewRouteContext(), method, "/")
	if sub == "" {
		return ""
	}
	return pattern + sub
}

// buildStubIndex walks routes and the sub-routers mounted in it.
func buildStubIndex(routes chi.Routes) *stubIndex {
	ix := &stubIndex{last: map[string]bool{}, stubs: map[string]stub{}}
	ix.add(routes, nil, 0)
	return ix
}

// maxMountDepth bounds the walk, in case a Routes implementation is cyclic.
const maxMountDepth = 32

func (ix *stubIndex) add(routes chi.Routes, path []string, depth int) {
	if depth > maxMountDepth {
		return
	}
	list := routes.Routes()
	handlers := make(map[string]map[string]bool, len(list))
	for _, rt := range list {
		m := map[string]bool{}
		for method := range rt.Handlers {
			m[method] = true
		}
		handlers[rt.Pattern] = m
	}
	for _, rt := range list {
		if rt.SubRoutes == nil || !strings.HasSuffix(rt.Pattern, "/*") {
			continue
		}
		for _, p := range []string{strings.TrimSuffix(rt.Pattern, "/*"), strings.TrimSuffix(rt.Pattern, "*")} {
			if p == "" {
				continue
			}
			key := strings.Join(append(path[:len(path):len(path)], p), "\x00")
			real := handlers[p]
			if real == nil {
				real = map[string]bool{}
			}
			ix.last[p] = true
			ix.stubs[key] = stub{sub: rt.SubRoutes, real: real}
		}
		ix.add(rt.SubRoutes, append(path[:len(path):len(path)], rt.Pattern), depth+1)
	}
}

// stubCache holds one stubIndex per router. chi's routing tree must not be
// changed once it serves requests, so an index built on first use stays
// valid.
type stubCache struct {
	m sync.Map // chi.Routes -> *stubIndex
}

func (c *stubCache) get(routes chi.Routes) *stubIndex {
	if !reflect.TypeOf(routes).Comparable() {
		return buildStubIndex(routes) // cannot be a map key; rare
	}
	if ix, ok := c.m.Load(routes); ok {
		return ix.(*stubIndex)
	}
	ix, _ := c.m.LoadOrStore(routes, buildStubIndex(routes))
	return ix.(*stubIndex)
}
