package middleware_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"github.com/sluicehq/sluice/decide"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/keyfunc/chikey"
	"github.com/sluicehq/sluice/middleware"
	"github.com/sluicehq/sluice/rules"
)

// lockedBuffer is a log sink safe for the server's goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// captureDefaultLog sends slog.Default to a buffer for the test.
func captureDefaultLog(t *testing.T) *lockedBuffer {
	t.Helper()
	buf := &lockedBuffer{}
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(buf, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })
	return buf
}

// TestKeyBeforeRoutingSaysSo: keyfunc.Endpoint in chi's r.Use runs before
// routing. The request is not at fault: it gets 500 with a detail saying
// the route pattern is not known where the limiter runs (not 400 "lacks
// the identity"), the error handler gets an error wrapping both
// ErrKeyFailed and keyfunc.ErrNotRouted, and a warning naming the fix is
// logged, at most once a second. chikey.Endpoint in the same place works.
func TestKeyBeforeRoutingSaysSo(t *testing.T) {
	cases := []struct {
		name string
		key  func(chi.Router) keyfunc.Key
		want int
	}{
		{"endpoint", func(chi.Router) keyfunc.Key { return keyfunc.Endpoint() }, http.StatusInternalServerError},
		{"header joined with endpoint", func(chi.Router) keyfunc.Key {
			return keyfunc.Join(keyfunc.Header("X-User"), keyfunc.Endpoint())
		}, http.StatusInternalServerError},
		{"chikey endpoint without a router", func(chi.Router) keyfunc.Key { return chikey.Endpoint(nil) }, http.StatusOK},
		{"chikey endpoint", func(r chi.Router) keyfunc.Key { return chikey.Endpoint(r) }, http.StatusOK},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			log := captureDefaultLog(t)
			store, _ := newMemstore(t)
			var handled error
			onError := middleware.WithErrorHandler(func(w http.ResponseWriter, r *http.Request, err error) {
				handled = err
				middleware.WriteError(w, r, err)
			})
			r := chi.NewRouter()
			set := rules.MustNew(rules.Rule{Name: "login", Key: tc.key(r), Limit: sluice.PerMinute(100)})
			r.Use(middleware.Limit(store, set, onError))
			r.Post("/login", func(http.ResponseWriter, *http.Request) {})
			srv := httptest.NewServer(r)
			t.Cleanup(srv.Close)

			start := time.Now()
			const n = 20
			var resp *http.Response
			var body []byte
			for range n {
				req, _ := http.NewRequest(http.MethodPost, srv.URL+"/login", nil)
				req.Header.Set("X-User", "alice")
				var err error
				if resp, err = srv.Client().Do(req); err != nil {
					t.Fatal(err)
				}
				var b bytes.Buffer
				_, _ = b.ReadFrom(resp.Body)
				resp.Body.Close()
				body = b.Bytes()
			}
			elapsed := time.Since(start)
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d %s, want %d", resp.StatusCode, body, tc.want)
			}
			lines := strings.Count(log.String(), "level=WARN")
			if tc.want == http.StatusOK {
				if handled != nil || lines != 0 {
					t.Fatalf("a key that finds the pattern: error %v, log %q", handled, log)
				}
				return
			}
			var p middleware.Problem
			if err := json.Unmarshal(body, &p); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(p.Detail, "route pattern") || !strings.Contains(p.Detail, "before routing") || strings.Contains(p.Detail, "lacks the identity") {
				t.Fatalf("detail %q: does not say the route pattern is unknown before routing", p.Detail)
			}
			if !errors.Is(handled, decide.ErrKeyFailed) || !errors.Is(handled, keyfunc.ErrNotRouted) || !strings.Contains(handled.Error(), `rule "login"`) {
				t.Fatalf("error handler got %v; want ErrKeyFailed and keyfunc.ErrNotRouted, naming the rule", handled)
			}
			if max := 1 + int(elapsed/time.Second); lines < 1 || lines > max {
				t.Fatalf("%d warnings for %d requests in %v, want 1 to %d:\n%s", lines, n, elapsed, max, log)
			}
			for _, fix := range []string{"chikey.Endpoint(router)", "keyfunc.EndpointFromMux(mux)", "r.With", `rule \"login\"`, "level=WARN"} {
				if !strings.Contains(log.String(), fix) {
					t.Errorf("the warning does not name %s:\n%s", fix, log)
				}
			}
		})
	}
}

// The warning goes to the limiter's logger (WithLogger), whatever error
// handler answers.
func TestKeyBeforeRoutingLogsToTheLimitersLogger(t *testing.T) {
	buf := &lockedBuffer{}
	store, _ := newMemstore(t)
	set := rules.MustNew(rules.Rule{Name: "login", Key: keyfunc.Endpoint(), Limit: sluice.PerMinute(100)})
	quietHandler := middleware.WithErrorHandler(func(w http.ResponseWriter, _ *http.Request, _ error) { w.WriteHeader(http.StatusTeapot) })
	r := chi.NewRouter()
	r.Use(middleware.Limit(store, set, decide.WithLogger(slog.New(slog.NewTextHandler(buf, nil))), quietHandler))
	r.Post("/login", func(http.ResponseWriter, *http.Request) {})
	rec := httptest.NewRecorder()
	r.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/login", nil))
	if rec.Code != http.StatusTeapot || !strings.Contains(buf.String(), "chikey.Endpoint(router)") {
		t.Fatalf("status %d, log %q", rec.Code, buf.String())
	}
}
