package client_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/client"
)

// fakeTime is a clock whose sleeps move it, recording each sleep.
type fakeTime struct {
	mu     sync.Mutex
	t      time.Time
	sleeps []time.Duration
}

func newFakeTime() *fakeTime { return &fakeTime{t: time.Unix(1_700_000_000, 0)} }

func (f *fakeTime) now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.t
}

func (f *fakeTime) sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sleeps = append(f.sleeps, d)
	f.t = f.t.Add(d)
	return nil
}

func (f *fakeTime) slept() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Duration(nil), f.sleeps...)
}

// script is a server answering each request with the next of its
// responses (the last one repeats), counting requests.
type script struct {
	calls atomic.Int64
	resps []func(w http.ResponseWriter)
}

func (s *script) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	i := int(s.calls.Add(1)) - 1
	s.resps[min(i, len(s.resps)-1)](w)
}

func status(code int, kv ...string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		for i := 0; i+1 < len(kv); i += 2 {
			w.Header().Set(kv[i], kv[i+1])
		}
		w.WriteHeader(code)
		io.WriteString(w, "body")
	}
}

var ok = status(200)

func serve(t *testing.T, resps ...func(w http.ResponseWriter)) (*httptest.Server, *script) {
	t.Helper()
	s := &script{resps: resps}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return srv, s
}

func newTransport(t *testing.T, ft *fakeTime, opts ...client.Option) *client.Transport {
	t.Helper()
	tr, err := client.New(nil, append([]client.Option{client.WithTime(ft.now, ft.sleep), client.WithJitter(0)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func do(t *testing.T, tr http.RoundTripper, ctx context.Context, method, url, body string) (*http.Response, error) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if resp != nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return resp, err
}

func TestRetries(t *testing.T) {
	past := time.Unix(1_700_000_000, 0).Add(-time.Hour).UTC().Format(http.TimeFormat)
	for _, tc := range []struct {
		name       string
		method     string
		body       string
		resps      []func(http.ResponseWriter)
		opts       []client.Option
		wantStatus int
		wantCalls  int64
		wantSleeps []time.Duration
	}{
		{"429 then ok", "GET", "", []func(http.ResponseWriter){status(429, "Retry-After", "2"), ok}, nil, 200, 2, []time.Duration{2 * time.Second}},
		{"429 as an HTTP-date in the past", "GET", "", []func(http.ResponseWriter){status(429, "Retry-After", past), ok}, nil, 200, 2, []time.Duration{}},
		{"429 without Retry-After, RateLimit t", "GET", "", []func(http.ResponseWriter){status(429, "RateLimit", `"a";r=0;t=3`), ok}, nil, 200, 2, []time.Duration{3 * time.Second}},
		{"429 with no word on when", "GET", "", []func(http.ResponseWriter){status(429)}, nil, 429, 1, nil},
		{"503 GET retried", "GET", "", []func(http.ResponseWriter){status(503, "Retry-After", "1"), ok}, nil, 200, 2, []time.Duration{time.Second}},
		{"503 POST not retried", "POST", "x=1", []func(http.ResponseWriter){status(503, "Retry-After", "1"), ok}, nil, 503, 1, nil},
		{"429 POST with a replayable body retried", "POST", "x=1", []func(http.ResponseWriter){status(429, "Retry-After", "1"), ok}, nil, 200, 2, []time.Duration{time.Second}},
		{"retries run out", "GET", "", []func(http.ResponseWriter){status(429, "Retry-After", "1")}, []client.Option{client.WithMaxRetries(2)}, 429, 3, []time.Duration{time.Second, time.Second}},
		{"503 POST with a malformed Retry-After handed back", "POST", "x=1", []func(http.ResponseWriter){status(503, "Retry-After", "soon"), ok}, nil, 503, 1, nil},
		{"500 untouched", "GET", "", []func(http.ResponseWriter){status(500, "Retry-After", "1"), ok}, nil, 500, 1, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, s := serve(t, tc.resps...)
			ft := newFakeTime()
			resp, err := do(t, newTransport(t, ft, append(tc.opts, client.WithoutPacing())...), context.Background(), tc.method, srv.URL, tc.body)
			if err != nil {
				t.Fatal(err)
			}
			slept := ft.slept()
			if resp.StatusCode != tc.wantStatus || s.calls.Load() != tc.wantCalls || len(slept) != len(tc.wantSleeps) {
				t.Fatalf("got %d after %d calls, slept %v; want %d after %d, slept %v", resp.StatusCode, s.calls.Load(), slept, tc.wantStatus, tc.wantCalls, tc.wantSleeps)
			}
			for i := range slept {
				if slept[i] != tc.wantSleeps[i] {
					t.Fatalf("slept %v, want %v", slept, tc.wantSleeps)
				}
			}
		})
	}
}

func TestStreamedBodyIsNotRetried(t *testing.T) {
	srv, s := serve(t, status(429, "Retry-After", "1"), ok)
	ft := newFakeTime()
	req, _ := http.NewRequest("PUT", srv.URL, io.NopCloser(strings.NewReader("streamed")))
	resp, err := newTransport(t, ft).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 429 || s.calls.Load() != 1 {
		t.Fatalf("a body that cannot be replayed: %d after %d calls, want 429 after 1", resp.StatusCode, s.calls.Load())
	}
}

// TestLyingServer: a server that asks for absurd or unreadable waits
// costs a bounded wait and a clear error.
func TestLyingServer(t *testing.T) {
	for _, tc := range []struct {
		name  string
		resp  func(http.ResponseWriter)
		ctx   time.Duration
		want  error
		calls int64
	}{
		{"a Retry-After of 30 years", status(429, "Retry-After", "999999999"), 0, client.ErrWaitTooLong, 1},
		{"a Retry-After past any integer", status(503, "Retry-After", "99999999999999999999999999"), 0, client.ErrWaitTooLong, 1},
		{"a date far ahead", status(429, "Retry-After", "Fri, 31 Dec 9999 23:59:59 GMT"), 0, client.ErrWaitTooLong, 1},
		{"a malformed Retry-After", status(429, "Retry-After", "in a while"), 0, client.ErrMalformed, 1},
		{"a negative Retry-After", status(429, "Retry-After", "-5"), 0, client.ErrMalformed, 1},
		{"beyond the context's deadline", status(429, "Retry-After", "20"), 10 * time.Second, context.DeadlineExceeded, 1},
		{"a RateLimit t of an eternity", status(429, "RateLimit", `"a";r=0;t=999999999999999`), 0, client.ErrWaitTooLong, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, s := serve(t, tc.resp, ok)
			ft := newFakeTime()
			ctx := context.Background()
			if tc.ctx > 0 {
				// The deadline is read on the transport's clock: decades
				// away in real time, tc.ctx away on the fake clock.
				ft.t = time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
				var cancel context.CancelFunc
				ctx, cancel = context.WithDeadline(ctx, ft.now().Add(tc.ctx))
				defer cancel()
			}
			start := time.Now()
			_, err := do(t, newTransport(t, ft, client.WithMaxWait(time.Minute)), ctx, "GET", srv.URL, "")
			var re *client.RefusedError
			if !errors.As(err, &re) || !errors.Is(err, tc.want) || re.Attempts != int(tc.calls) {
				t.Fatalf("got %v, want a RefusedError wrapping %v", err, tc.want)
			}
			if s.calls.Load() != tc.calls || len(ft.slept()) != 0 {
				t.Fatalf("%d calls, slept %v: want %d calls and no wait", s.calls.Load(), ft.slept(), tc.calls)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Fatalf("took %v", d) // a ceiling against hangs only
			}
		})
	}
}

// TestTotalWaitIsBounded: successive waits that each fit but add up past
// the maximum stop at the maximum.
func TestTotalWaitIsBounded(t *testing.T) {
	srv, _ := serve(t, status(429, "Retry-After", "4"))
	ft := newFakeTime()
	_, err := do(t, newTransport(t, ft, client.WithMaxWait(10*time.Second), client.WithMaxRetries(10), client.WithoutPacing()), context.Background(), "GET", srv.URL, "")
	var total time.Duration
	for _, d := range ft.slept() {
		total += d
	}
	if !errors.Is(err, client.ErrWaitTooLong) || total != 8*time.Second {
		t.Fatalf("got %v after waiting %v, want ErrWaitTooLong after 8s", err, total)
	}
}

// TestCancelDuringWait: a real sleep ends with the context.
func TestCancelDuringWait(t *testing.T) {
	srv, s := serve(t, status(429, "Retry-After", "20"), ok)
	tr, err := client.New(nil, client.WithMaxWait(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	_, err = do(t, tr, ctx, "GET", srv.URL, "")
	if !errors.Is(err, context.Canceled) || s.calls.Load() != 1 {
		t.Fatalf("got %v after %d calls, want context.Canceled after 1", err, s.calls.Load())
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("a cancelled wait took %v", d) // a ceiling against hangs only
	}
}

// TestPacing: once a response says no quota remains, the next request
// waits one unit's share of the policy's window before it is sent.
func TestPacing(t *testing.T) {
	srv, s := serve(t,
		status(200, "RateLimit", `"api";r=1;t=1`, "RateLimit-Policy", `"api";q=10;w=60`),
		status(200, "RateLimit", `"api";r=0;t=60`, "RateLimit-Policy", `"api";q=10;w=60`),
		status(200, "RateLimit", `"api";r=0;t=54`, "RateLimit-Policy", `"api";q=10;w=60`))
	ft := newFakeTime()
	tr := newTransport(t, ft)
	for range 3 {
		if _, err := do(t, tr, context.Background(), "GET", srv.URL, ""); err != nil {
			t.Fatal(err)
		}
	}
	if got := ft.slept(); len(got) != 1 || got[0] != 6*time.Second || s.calls.Load() != 3 {
		t.Fatalf("slept %v over %d calls, want one wait of 6s (60s/10) before the third", got, s.calls.Load())
	}
}

func TestNewRefusesBadOptions(t *testing.T) {
	for name, o := range map[string]client.Option{
		"negative wait":    client.WithMaxWait(-1),
		"negative retries": client.WithMaxRetries(-1),
		"jitter above 1":   client.WithJitter(1.5),
		"NaN jitter":       client.WithJitter(nan()),
		"nil time":         client.WithTime(nil, nil),
	} {
		if tr, err := client.New(nil, o); tr != nil || !errors.Is(err, client.ErrInvalidConfig) {
			t.Errorf("%s: %v, %v; want an error wrapping ErrInvalidConfig", name, tr, err)
		}
	}
}

func TestMustNew(t *testing.T) {
	if tr := client.MustNew(nil, client.WithMaxRetries(1)); tr == nil {
		t.Fatal("MustNew with valid options: nil transport")
	}
	defer func() {
		if err, _ := recover().(error); !errors.Is(err, client.ErrInvalidConfig) {
			t.Fatalf("MustNew with an invalid option panicked with %v, want an error wrapping ErrInvalidConfig", err)
		}
	}()
	client.MustNew(nil, client.WithMaxWait(-1))
}

func nan() float64 { var z float64; return z / z }
