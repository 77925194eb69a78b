package middleware_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluicehq/sluice/decide"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/middleware"
	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/store/redisstore"
)

// The killed process's test: killedHold is its rule's hold; killedEnv,
// set to a Redis address, makes the test binary the child that serves
// the middleware on that Redis and holds slots; killedURL prefixes the
// line on which it tells its address, killedEntered the one it writes
// each time a request enters its handler.
const (
	killedHold    = 2 * time.Second
	killedEnv     = "SLUICE_TEST_KILLED_CHILD_REDIS"
	killedURL     = "killed-child-url "
	killedEntered = "killed-child-entered"
	killedKey     = "k-killed"
)

// killedSet is the rule of the killed process's test, on each instance:
// two requests of an API key in flight, a short hold; on_fail closed, so
// that a store failure answers 503, never a 200 or 429 of its own.
func killedSet() *rules.Set {
	return rules.MustNew(rules.Rule{Name: "reports-in-flight", Key: keyfunc.APIKey("X-API-Key"), OnFail: rules.FailClosed,
		Concurrency: &rules.Concurrency{Max: 2, Hold: killedHold}})
}

// A process killed (SIGKILL) while it holds concurrency slots has them
// freed after the rule's hold on the other instances, and not before: the
// test binary runs again as a child that serves the middleware on the same
// Redis, whose handler holds two requests for ever; the parent's own
// instance refuses the key while they run, still right after the child is
// killed (the kill frees nothing), and admits it once the hold has passed.
func TestConcurrencyKilledProcessFreedAfterHold(t *testing.T) {
	if addr := os.Getenv(killedEnv); addr != "" {
		serveKilledChild(t, addr)
		return
	}
	if os.Getenv("SLUICE_LONG") == "" {
		t.Skip("real time, in a child process (about 5 s): set SLUICE_LONG=1")
	}
	srv := redistest.Start(t)

	// The child, its stdout on a pipe of ours: its lines end when it dies.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestConcurrencyKilledProcessFreedAfterHold$", "-test.count=1", "-test.timeout=2m")
	cmd.Env = append(os.Environ(), killedEnv+"="+srv.Addr)
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	lines := make(chan string)
	go func() {
		defer close(lines)
		defer r.Close()
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	killed := false
	kill := func() {
		if killed {
			return
		}
		killed = true
		_ = cmd.Process.Kill()
		for range lines { // to EOF: the child is gone
		}
		_ = cmd.Wait()
	}
	t.Cleanup(kill)
	var said []string // the child's other lines: its failures
	await := func(what string, prefix string, answers <-chan error) string {
		t.Helper()
		ceiling := time.After(30 * time.Second) // against a hang: the child starts in far less
		for {
			select {
			case line, ok := <-lines:
				if !ok {
					t.Fatalf("the child ended before %s; it said:\n%s", what, strings.Join(said, "\n"))
				}
				if rest, found := strings.CutPrefix(line, prefix); found {
					return rest
				}
				said = append(said, line)
			case err := <-answers:
				t.Fatalf("before %s, a request to the child ended: %v", what, err)
			case <-ceiling:
				t.Fatalf("no %s after 30 s; the child said:\n%s", what, strings.Join(said, "\n"))
			}
		}
	}
	childURL := await("address from the child", killedURL, nil)

	// Two requests of the key take both slots in the child, and stay.
	tr := &http.Transport{DisableKeepAlives: true}
	t.Cleanup(tr.CloseIdleConnections)
	answers := make(chan error, 2)
	for range 2 {
		go func() {
			req, _ := http.NewRequest(http.MethodGet, childURL, nil)
			req.Header.Set("X-API-Key", killedKey)
			resp, err := (&http.Client{Transport: tr}).Do(req)
			if err == nil {
				resp.Body.Close()
				err = fmt.Errorf("answered %d", resp.StatusCode)
			}
			answers <- err
		}()
	}
	for i := range 2 {
		await(fmt.Sprintf("request %d in the child's handler", i+1), killedEntered, answers)
	}

	// The parent's own instance on the same Redis, remembering no
	// refusal: each of its answers is Redis's.
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, ContextTimeoutEnabled: true, DialerRetries: 1})
	t.Cleanup(func() { c.Close() })
	store, err := redisstore.New(c, redisstore.Config{Logger: quietLogger(), RememberRefusals: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close(context.Background()) })
	parent := serve(t, middleware.Limit(store, killedSet(), decide.WithBudget(5*time.Second), decide.WithLogger(quietLogger())), &okHandler{})
	status := func() int {
		resp := get(t, parent.Client(), parent.URL, "X-API-Key", killedKey)
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := status(); code != http.StatusTooManyRequests {
		t.Fatalf("while the child holds both slots: %d, want 429", code)
	}

	killedAt := time.Now()
	kill()
	for range 2 {
		if err := <-answers; err == nil || strings.HasPrefix(err.Error(), "answered") {
			t.Fatalf("a request held in the child when it was killed: %v, want a broken connection", err)
		}
	}
	// The child refreshed its slots every hold/3: they stand for at least
	// 2/3 of the hold after the kill, far more than this request takes.
	if code, since := status(), time.Since(killedAt); code != http.StatusTooManyRequests {
		t.Fatalf("%v after the child was killed: %d, want 429 (its slots held until their hold of %v ends)", since, code, killedHold)
	}
	// Then they are freed without anyone freeing them. The ceiling is
	// only against a hang.
	for {
		code := status()
		since := time.Since(killedAt)
		if code == http.StatusOK {
			t.Logf("the killed child's slots freed %v after the kill (hold %v)", since.Round(time.Millisecond), killedHold)
			return
		}
		if code != http.StatusTooManyRequests {
			t.Fatalf("%v after the child was killed: %d, want 429 until its slots' hold ends, then 200", since, code)
		}
		if since > killedHold+10*time.Second {
			t.Fatalf("%v after the child was killed, its slots are still held (hold %v)", since, killedHold)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// serveKilledChild is the child of TestConcurrencyKilledProcessFreedAfterHold:
// the middleware on the Redis at addr, in front of a handler that holds
// every request for ever, served on a loopback port it writes to stdout.
// It never returns: the parent kills it.
func serveKilledChild(t *testing.T, addr string) {
	lim := middleware.Limit(newRedisStore(t, addr), killedSet(), decide.WithBudget(5*time.Second), decide.WithLogger(quietLogger()))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: lim(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		fmt.Println(killedEntered)
		select {} // held until the process is killed
	}))}
	go func() { _ = srv.Serve(ln) }()
	fmt.Println(killedURL + "http://" + ln.Addr().String())
	select {}
}
