package keyfunc_test

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/keyfunc"
)

func TestEndpointReadsRoutedPattern(t *testing.T) {
	fn := keyfunc.Endpoint()
	r := httptest.NewRequest(http.MethodGet, "/users/1", nil)
	_, err := fn.Identity(r)
	wantNoKey(t, err) // not routed yet

	mux := http.NewServeMux()
	var keys []string
	mux.Handle("GET /users/{id}", http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		keys = append(keys, keyOf(t, fn, r))
	}))
	for _, p := range []string{"/users/1", "/users/2"} {
		mux.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, p, nil))
	}
	if len(keys) != 2 || keys[0] != "GET /users/{id}" || keys[1] != keys[0] {
		t.Fatalf("keys %q", keys)
	}
}

// recorder is a limiter stand-in: middleware that records the key of every
// request it sees.
type recorder struct {
	fn   keyfunc.Key
	mu   sync.Mutex
	keys map[string]string // X-Case header -> key or "error: ..."
}

func (rec *recorder) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k, err := rec.fn.Identity(r)
		if err != nil {
			k = "error: " + err.Error()
		}
		rec.mu.Lock()
		rec.keys[r.Header.Get("X-Case")] = k
		rec.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

func newMux() *http.ServeMux {
	ok := func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }
	mux := http.NewServeMux()
	mux.HandleFunc("GET /users/{id}", ok)
	mux.HandleFunc("POST /users/", ok)
	mux.HandleFunc("/static/", ok)
	mux.HandleFunc("/x/{id}/", ok)
	mux.HandleFunc("api.example.com/v1/{thing}", ok)
	return mux
}

// TestEndpointFromMuxInFrontOfMux installs the key function in middleware
// wrapped around the whole ServeMux, served over a real connection, where
// routing has not happened yet.
func TestEndpointFromMuxInFrontOfMux(t *testing.T) {
	mux := newMux()
	rec := &recorder{fn: keyfunc.EndpointFromMux(mux), keys: map[string]string{}}
	srv := httptest.NewServer(rec.wrap(mux))
	defer srv.Close()

	cases := []struct {
		method, path, host, want string
	}{
		{"GET", "/users/1", "", "GET /users/{id}"},
		{"GET", "/users/2", "", "GET /users/{id}"},
		{"HEAD", "/users/3", "", "HEAD /users/{id}"},
		{"POST", "/users/7/avatar", "", "POST /users/"},
		{"GET", "/static/css/site.css", "", "GET /static/"},
		{"DELETE", "/static/a", "", "DELETE /static/"},
		{"GET", "/v1/cats", "api.example.com", "GET api.example.com/v1/{thing}"},
		{"GET", "/v1/dogs", "api.example.com:8443", "GET api.example.com/v1/{thing}"},
		// 404, 405 and random methods share fixed keys
		{"GET", "/nope/1", "", "GET <unmatched>"},
		{"GET", "/nope/2", "", "GET <unmatched>"},
		{"GET", "/v1/cats", "other.example", "GET <unmatched>"},
		{"DELETE", "/users/1", "", "DELETE <unmatched>"},
		{"BREW", "/static/pot", "", "<other> /static/"},
		{"BREW2", "/nope", "", "<other> <unmatched>"},
		// a path-cleaning redirect keys on the pattern it redirects to
		{"GET", "/users/../users/5", "", "GET /users/{id}"},
	}
	client := srv.Client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	for i, tc := range cases {
		req, err := http.NewRequest(tc.method, srv.URL+tc.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = tc.host
		req.Header.Set("X-Case", strconv.Itoa(i))
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	for i, tc := range cases {
		if got := rec.keys[strconv.Itoa(i)]; got != tc.want {
			t.Errorf("%s %s (host %q): key %q, want %q", tc.method, tc.path, tc.host, got, tc.want)
		}
	}
}

// TestEndpointFromMuxSameKeyAfterRouting checks the lookup and the routed
// pattern agree when the middleware sits behind the mux.
func TestEndpointFromMuxSameKeyAfterRouting(t *testing.T) {
	mux := http.NewServeMux()
	fromMux := keyfunc.EndpointFromMux(mux)
	routed := keyfunc.Endpoint()
	var got [2]string
	mux.Handle("GET /items/{id}", http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		got = [2]string{keyOf(t, fromMux, r), keyOf(t, routed, r)}
	}))
	mux.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/items/9", nil))
	if got[0] != "GET /items/{id}" || got[1] != got[0] {
		t.Fatalf("lookup %q, routed %q", got[0], got[1])
	}
}

// TestEndpointFromMuxConnectRedirect: for CONNECT, ServeMux.Handler reports
// the trailing-slash redirect target, the request's own path; that must not
// become a key (one bucket per id).
func TestEndpointFromMuxConnectRedirect(t *testing.T) {
	mux := newMux()
	fn := keyfunc.EndpointFromMux(mux)
	for _, p := range []string{"/x/123", "/x/456", "/x/a%2Fb"} {
		r := httptest.NewRequest(http.MethodConnect, p, nil)
		_, pattern := mux.Handler(r)
		t.Logf("ServeMux.Handler reports pattern %q for CONNECT %s", pattern, p)
		if got := keyOf(t, fn, r); got != "CONNECT <unmatched>" {
			t.Errorf("CONNECT %s: key %q", p, got)
		}
	}
	// A CONNECT that matches a pattern keeps it.
	r := httptest.NewRequest(http.MethodConnect, "/x/123/", nil)
	if got := keyOf(t, fn, r); got != "CONNECT /x/{id}/" {
		t.Errorf("CONNECT /x/123/: key %q", got)
	}
}

func TestEndpointFromMuxNil(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("EndpointFromMux(nil) did not panic")
		}
	}()
	keyfunc.EndpointFromMux(nil)
}
