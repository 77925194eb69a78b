package main

import (
	"context"
	"errors"
	"github.com/sluicehq/sluice/decide"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/client"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/store/memstore"
)

// simTime is virtual time shared by a store and its clients: it moves
// only when every client is asleep, to the earliest wake-up, so a minute
// of traffic takes milliseconds and no client is ever late or early.
type simTime struct {
	mu       sync.Mutex
	t        time.Time
	live     int
	sleepers []*sleeper
}

type sleeper struct {
	wake time.Time
	ch   chan struct{}
}

func (s *simTime) Now() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.t
}

// join and leave count the clients that take part.
func (s *simTime) join() { s.mu.Lock(); s.live++; s.mu.Unlock() }

func (s *simTime) leave() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.live--
	s.advanceLocked()
}

func (s *simTime) sleep(ctx context.Context, d time.Duration) error {
	sl := &sleeper{wake: s.Now().Add(d), ch: make(chan struct{})}
	s.mu.Lock()
	sl.wake = s.t.Add(d)
	s.sleepers = append(s.sleepers, sl)
	s.advanceLocked()
	s.mu.Unlock()
	select {
	case <-sl.ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// advanceLocked wakes the earliest sleepers once every client sleeps.
func (s *simTime) advanceLocked() {
	if s.live == 0 || len(s.sleepers) < s.live {
		return
	}
	sort.Slice(s.sleepers, func(i, j int) bool { return s.sleepers[i].wake.Before(s.sleepers[j].wake) })
	first := s.sleepers[0].wake
	if first.After(s.t) {
		s.t = first
	}
	n := 0
	for n < len(s.sleepers) && !s.sleepers[n].wake.After(first) {
		close(s.sleepers[n].ch)
		n++
	}
	s.sleepers = s.sleepers[n:]
}

// tinyRules limits every client of the demo, together, to 2 a second.
func tinyRules(chi.Routes) (rules.Source, error) {
	return rules.New(rules.Rule{Name: "per-ip", Key: keyfunc.ClientIP(), Limit: sluice.PerSecond(2)})
}

// convergence is what N clients saw against the tiny limit.
type convergence struct {
	admitted, refused, gaveUp int64
	elapsed                   time.Duration
	longest                   time.Duration // the longest one request took, in virtual time
}

// converge runs clients, each sending perClient requests in turn through
// a transport (one shared by all when shared), against the demo gateway
// on the tiny limit, over real HTTP.
func converge(t *testing.T, clients, perClient int, shared bool, maxWait time.Duration, opts ...client.Option) convergence {
	t.Helper()
	sim := &simTime{t: time.Unix(1_800_000_000, 0)}
	store := memstore.New(memstore.Config{Clock: sim, SweepInterval: -1})
	t.Cleanup(func() { store.Close(context.Background()) })
	router, err := newRouterWith(store, slog.New(slog.NewTextHandler(io.Discard, nil)), tinyRules, decide.WithClock(sim))
	if err != nil {
		t.Fatal(err)
	}
	var c convergence
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, status: 200}
		router.ServeHTTP(rec, r)
		if rec.status == http.StatusTooManyRequests {
			atomic.AddInt64(&c.refused, 1)
		} else {
			atomic.AddInt64(&c.admitted, 1)
		}
	}))
	t.Cleanup(srv.Close)
	newTransport := func() http.RoundTripper {
		tr, err := client.New(srv.Client().Transport, client.WithTime(sim.Now, sim.sleep), client.WithMaxWait(maxWait), client.WithMaxRetries(20))
		if len(opts) > 0 {
			tr, err = client.New(srv.Client().Transport, append([]client.Option{client.WithTime(sim.Now, sim.sleep), client.WithMaxWait(maxWait), client.WithMaxRetries(20)}, opts...)...)
		}
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	sharedTransport := newTransport()
	start := sim.Now()
	var longest atomic.Int64
	var wg sync.WaitGroup
	for range clients {
		sim.join()
		tr := sharedTransport
		if !shared {
			tr = newTransport()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer sim.leave()
			hc := &http.Client{Transport: tr}
			for range perClient {
				began := sim.Now()
				resp, err := hc.Get(srv.URL + "/items")
				took := sim.Now().Sub(began)
				for old := longest.Load(); took > time.Duration(old) && !longest.CompareAndSwap(old, int64(took)); old = longest.Load() {
				}
				var re *client.RefusedError
				switch {
				case errors.As(err, &re):
					atomic.AddInt64(&c.gaveUp, 1)
				case err != nil:
					t.Error(err)
					return
				default:
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						atomic.AddInt64(&c.gaveUp, 1)
					}
				}
			}
		}()
	}
	wg.Wait()
	c.elapsed = sim.Now().Sub(start)
	c.longest = time.Duration(longest.Load())
	return c
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

// TestClientsConverge: 20 clients sending 5 requests each against a
// limit of 2 a second shared by all of them settle on the limit, without
// storms of 429s, and no request waits beyond its bound. A baseline of
// clients that only obey Retry-After (no jitter, no pacing) shows what
// the jitter and the pacing save.
func TestClientsConverge(t *testing.T) {
	const clients, perClient = 20, 5
	maxWait := 90 * time.Second
	baseline := converge(t, clients, perClient, false, maxWait, client.WithJitter(0), client.WithoutPacing())
	t.Logf("baseline, Retry-After only, a transport per client: admitted %d, refused %d (%.2f per admitted), gave up %d, in %v",
		baseline.admitted, baseline.refused, float64(baseline.refused)/float64(max(baseline.admitted, 1)), baseline.gaveUp, baseline.elapsed)
	for _, shared := range []bool{true, false} {
		name := map[bool]string{true: "one shared transport", false: "a transport per client"}[shared]
		t.Run(name, func(t *testing.T) {
			c := converge(t, clients, perClient, shared, maxWait)
			rate := float64(c.admitted) / c.elapsed.Seconds()
			t.Logf("%s: admitted %d, refused %d (%.2f per admitted), gave up %d, in %v of virtual time: %.2f admitted/s against a limit of 2/s; longest request %v",
				name, c.admitted, c.refused, float64(c.refused)/float64(c.admitted), c.gaveUp, c.elapsed, rate, c.longest)
			if c.admitted+c.gaveUp != clients*perClient {
				t.Fatalf("%d admitted and %d given up of %d requests", c.admitted, c.gaveUp, clients*perClient)
			}
			if c.longest > maxWait+time.Second {
				t.Fatalf("a request took %v, beyond its bound of %v", c.longest, maxWait)
			}
			// The limit admits 2 + 2/s: never more; and the clients keep it busy.
			if burst := 2.0; float64(c.admitted) > burst+2*c.elapsed.Seconds() {
				t.Fatalf("%d admitted in %v: over the limit", c.admitted, c.elapsed)
			}
			if rate < 1.5 {
				t.Fatalf("%.2f admitted/s: the clients did not converge on the limit of 2/s", rate)
			}
			// One process paces its requests and is almost never refused;
			// independent clients collide, but far less than the baseline.
			maxRefused := c.admitted / 10
			if !shared {
				maxRefused = min(3*c.admitted, baseline.refused/2)
			}
			if c.refused > maxRefused {
				t.Fatalf("%d refused for %d admitted (baseline %d): a storm of 429s", c.refused, c.admitted, baseline.refused)
			}
		})
	}
}

// liar rewrites the gateway's refusals: Retry-After becomes retryAfter,
// and every RateLimit field is replaced by a malformed one.
type liar struct {
	http.ResponseWriter
	retryAfter string
}

func (l *liar) WriteHeader(code int) {
	h := l.Header()
	if h.Get("Retry-After") != "" {
		h.Set("Retry-After", l.retryAfter)
	}
	if h.Get("RateLimit") != "" {
		h.Set("RateLimit", `"per-ip";r=;t=oops`)
	}
	l.ResponseWriter.WriteHeader(code)
}

// TestClientAgainstALyingGateway: the demo gateway, made to lie in its
// refusals, costs the client a bounded wait and a clear error.
func TestClientAgainstALyingGateway(t *testing.T) {
	for _, tc := range []struct {
		retryAfter string
		want       error
	}{
		{"31536000", client.ErrWaitTooLong},
		{"Fri, 31 Dec 9999 23:59:59 GMT", client.ErrWaitTooLong},
		{"later", client.ErrMalformed},
	} {
		t.Run(tc.retryAfter, func(t *testing.T) {
			sim := &simTime{t: time.Unix(1_800_000_000, 0)}
			store := memstore.New(memstore.Config{Clock: sim, SweepInterval: -1})
			t.Cleanup(func() { store.Close(context.Background()) })
			router, err := newRouterWith(store, slog.New(slog.NewTextHandler(io.Discard, nil)), tinyRules, decide.WithClock(sim))
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				router.ServeHTTP(&liar{ResponseWriter: w, retryAfter: tc.retryAfter}, r)
			}))
			t.Cleanup(srv.Close)
			var slept []time.Duration
			tr, err := client.New(nil, client.WithMaxWait(time.Minute), client.WithTime(sim.Now, func(_ context.Context, d time.Duration) error {
				slept = append(slept, d)
				return nil
			}))
			if err != nil {
				t.Fatal(err)
			}
			hc := &http.Client{Transport: tr}
			for i := range 3 {
				resp, err := hc.Get(srv.URL + "/items")
				if i < 2 {
					if err != nil || resp.StatusCode != http.StatusOK {
						t.Fatalf("request %d within the limit: %v %v", i+1, resp, err)
					}
					resp.Body.Close()
					continue
				}
				var re *client.RefusedError
				if !errors.As(err, &re) || !errors.Is(err, tc.want) || re.StatusCode != http.StatusTooManyRequests {
					t.Fatalf("the refused request: %v, %v; want a RefusedError wrapping %v", resp, err, tc.want)
				}
			}
			// Pacing spaced the third request by the policy's 500 ms; the
			// lie itself was never waited for.
			if len(slept) != 1 || slept[0] != 500*time.Millisecond {
				t.Fatalf("slept %v, want only the 500ms of pacing", slept)
			}
		})
	}
}
