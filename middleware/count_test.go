package middleware_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/decide"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/middleware"
	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/store/redisstore"
)

// failedLogins is the rule of the docs: 5 failed logins per user per 15
// minutes.
func failedLogins() *rules.Set {
	return rules.MustNew(rules.Rule{Name: "failed-logins", Key: keyfunc.Header("X-User"),
		Limit: sluice.Limit{Rate: 5, Period: 15 * time.Minute}, Count: &rules.Count{Status: []int{401, 403}}})
}

// loginHandler answers 200 to the right password and 401 to any other,
// counting the requests that reach it.
type loginHandler struct {
	calls   atomic.Int64
	hold    chan struct{} // when not nil, each request says so on entered and waits for it to close
	entered chan struct{}
}

func (h *loginHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.calls.Add(1)
	if h.hold != nil {
		h.entered <- struct{}{}
		<-h.hold
	}
	if r.Header.Get("X-Password") != "right" {
		http.Error(w, "wrong password", http.StatusUnauthorized)
		return
	}
	_, _ = io.WriteString(w, "welcome")
}

// countStores are the stores the counting and concurrency tests run on:
// memstore, a redis-server the test starts, and a 3-master Redis Cluster
// it starts.
func countStores(t *testing.T) map[string]func(t *testing.T) sluice.Store {
	return map[string]func(t *testing.T) sluice.Store{
		"memstore": func(t *testing.T) sluice.Store { s, _ := newMemstore(t); return s },
		"redis": func(t *testing.T) sluice.Store {
			return newRedisStore(t, redistest.Start(t).Addr)
		},
		"cluster": func(t *testing.T) sluice.Store {
			c := redistest.StartCluster(t, redistest.ClusterOptions{Replicas: -1})
			return redisStoreOn(t, clusterClient(t, c.Addrs()), redisstore.Config{})
		},
	}
}

// TestFailedLogins: 5 good then 5 bad logins then a good one, at 5 failed
// logins per 15 minutes, through real HTTP: the good ones never count, the
// 10 first are answered by the handler, and the 11th is refused although
// its password is right.
func TestFailedLogins(t *testing.T) {
	for name, newStore := range countStores(t) {
		t.Run(name, func(t *testing.T) {
			next := &loginHandler{}
			srv := serve(t, middleware.Limit(newStore(t), failedLogins(), decide.WithBudget(5*time.Second), decide.WithLogger(quietLogger())), next)
			var got []int
			for _, pw := range []string{"right", "right", "right", "right", "right", "wrong", "wrong", "wrong", "wrong", "wrong", "right"} {
				got = append(got, get(t, srv.Client(), srv.URL, "X-User", "ada", "X-Password", pw).StatusCode)
			}
			want := []int{200, 200, 200, 200, 200, 401, 401, 401, 401, 401, 429}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("statuses %v, want %v", got, want)
				}
			}
			if n := next.calls.Load(); n != 10 {
				t.Fatalf("handler answered %d, want 10", n)
			}
			// Another user's logins are theirs.
			if resp := get(t, srv.Client(), srv.URL, "X-User", "bob", "X-Password", "wrong"); resp.StatusCode != 401 {
				t.Fatalf("bob: %d", resp.StatusCode)
			}
		})
	}
}

// TestConcurrentFailedLogins: 50 bad logins at once never let more than
// the limit reach the handler, beyond those already counted: the cost is
// taken at admission, not when the status is known.
func TestConcurrentFailedLogins(t *testing.T) {
	for name, newStore := range countStores(t) {
		t.Run(name, func(t *testing.T) {
			next := &loginHandler{}
			srv := serve(t, middleware.Limit(newStore(t), failedLogins(), decide.WithBudget(5*time.Second), decide.WithLogger(quietLogger())), next)
			for _, pw := range []string{"wrong", "right", "wrong"} { // 2 counted
				get(t, srv.Client(), srv.URL, "X-User", "ada", "X-Password", pw)
			}
			next.calls.Store(0)
			// The admitted stay in the handler until all 50 are decided.
			next.hold, next.entered = make(chan struct{}), make(chan struct{}, 50)
			refusedCh := make(chan struct{}, 50)
			var wg sync.WaitGroup
			var refused atomic.Int64
			for range 50 {
				wg.Go(func() {
					req, _ := http.NewRequest(http.MethodPost, srv.URL, nil)
					req.Header.Set("X-User", "ada")
					req.Header.Set("X-Password", "wrong")
					resp, err := srv.Client().Do(req)
					if err != nil {
						t.Error(err)
						refusedCh <- struct{}{} // decided, if not as wanted
						return
					}
					resp.Body.Close()
					if resp.StatusCode == http.StatusTooManyRequests {
						refused.Add(1)
						refusedCh <- struct{}{}
					}
				})
			}
			ceiling := time.After(10 * time.Second) // against a hang only
			for decided := 0; decided < 50; decided++ {
				select {
				case <-next.entered:
				case <-refusedCh:
				case <-ceiling:
					close(next.hold)
					t.Fatalf("%d of 50 decided after 10s", decided)
				}
			}
			close(next.hold)
			wg.Wait()
			if n := next.calls.Load(); n != 3 || refused.Load() != 47 {
				t.Fatalf("%d reached the handler and %d were refused, want 3 and 47 (5 per 15 minutes, 2 already counted)", n, refused.Load())
			}
		})
	}
}

// TestCountedEnds: how a request ends when its handler does not say: a
// panic counts as 500, a handler that writes nothing as 200. Each rule
// allows 2 of the statuses it counts; the third request is refused only
// when the end counts.
func TestCountedEnds(t *testing.T) {
	panics := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") })
	silent := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	flushes := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.(http.Flusher).Flush() })
	created := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusEarlyHints)
		w.WriteHeader(http.StatusCreated)
	})
	tests := []struct {
		name    string
		handler http.Handler
		count   rules.Count
		counted bool
	}{
		{"panic counts as 500", panics, rules.Count{Status: []int{500}}, true},
		{"panic counts in 5xx", panics, rules.Count{Classes: []int{5}}, true},
		{"panic is not a 401", panics, rules.Count{Status: []int{401}}, false},
		{"no write counts as 200", silent, rules.Count{Status: []int{200}}, true},
		{"no write is not a 500", silent, rules.Count{Classes: []int{5}}, false},
		{"flush counts as 200", flushes, rules.Count{Status: []int{200}}, true},
		{"the final status counts, not an informational one", created, rules.Count{Status: []int{201}}, true},
		{"an informational status does not count", created, rules.Count{Status: []int{103}}, false},
		{"a gRPC code does not count an HTTP request", silent, rules.Count{GRPC: []rules.GRPCCode{0}}, false},
	}
	for name, newStore := range countStores(t) {
		t.Run(name, func(t *testing.T) {
			store := newStore(t)
			for i, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					set := rules.MustNew(rules.Rule{Name: "ends", Key: keyfunc.Header("X-User"), Limit: sluice.PerHour(2), Count: &tc.count})
					h := middleware.Limit(store, set, decide.WithBudget(5*time.Second), decide.WithLogger(quietLogger()))(tc.handler)
					user := string(rune('a' + i)) // a bucket per case
					var codes []int
					for range 3 {
						codes = append(codes, serveRecovered(h, user))
					}
					refused := codes[2] == http.StatusTooManyRequests
					if refused != tc.counted {
						t.Fatalf("statuses %v: refused %v, want %v", codes, refused, tc.counted)
					}
				})
			}
		})
	}
}

// serveRecovered serves one request of user through h, as net/http would
// with its panic recovered, and returns its status (0 after a panic).
func serveRecovered(h http.Handler, user string) (code int) {
	req := httptest.NewRequest(http.MethodPost, "/login", nil)
	req.Header.Set("X-User", user)
	rec := httptest.NewRecorder()
	defer func() {
		if recover() != nil {
			code = 0
		}
	}()
	h.ServeHTTP(rec, req)
	return rec.Code
}
