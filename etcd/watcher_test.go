package etcd_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/etcd"
	"github.com/sluicehq/sluice/etcd/internal/etcdtest"
	"github.com/sluicehq/sluice/middleware"
	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/rules/admin"
	"github.com/sluicehq/sluice/rules/rulefile"
	"github.com/sluicehq/sluice/store/memstore"
)

// Both packages take a Watcher wherever they take a *rules.Set.
var (
	_ rules.Source = (*etcd.Watcher)(nil)
	_ rules.Source = (*etcd.Watcher)(nil)
)

const key = "/sluice/rules.yaml"

// doc returns a rule file of one global rule of rate per minute.
func doc(rate string) string {
	return "rules:\n  - name: global\n    key: global\n    limit: {rate: " + rate + ", per: 1m}\n"
}

// bad has a mistake on line 4.
const bad = "rules:\n  - name: global\n    key: global\n    limit: {rate: 10, per: 1fortnight}\n"

// quiet discards the watchers' logs.
var quiet = slog.New(slog.DiscardHandler)

// rate returns the rate of the first rule of w's rules.
func rate(w *etcd.Watcher) int64 { return w.Current().Rules()[0].Limit.Rate }

// instance is one watching instance: its watcher and what its hooks saw.
type instance struct {
	w       *etcd.Watcher
	reloads chan *rules.Set
	errs    chan error
}

// watchers starts n watchers of key, each with a client of its own.
func watchers(t *testing.T, srv *etcdtest.Server, n int) []*instance {
	t.Helper()
	var out []*instance
	for range n {
		in := &instance{reloads: make(chan *rules.Set, 16), errs: make(chan error, 16)}
		w, err := etcd.Watch(context.Background(), srv.Client(), key, rulefile.LoadConfig{},
			etcd.WithLogger(quiet),
			etcd.OnReload(func(s *rules.Set) { in.reloads <- s }),
			etcd.OnError(func(err error) { in.errs <- err }))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { w.Close() })
		in.w = w
		out = append(out, in)
	}
	return out
}

// TestChangeReachesThreeWatchersWithinASecond: a change written to etcd is
// in force on three watching instances, each with a client of its own,
// within a second, at the same revision. The second is a measurement,
// asserted only with SLUICE_TIMING=1 (on a quiet machine: .ci/test's
// timing tier); otherwise the change has 10 s to arrive.
func TestChangeReachesThreeWatchersWithinASecond(t *testing.T) {
	timing := os.Getenv("SLUICE_TIMING") != ""
	bound := 10 * time.Second
	if timing {
		bound = time.Second
	} else {
		t.Parallel()
	}
	srv := etcdtest.Start(t)
	srv.Put(key, doc("10"))
	ins := watchers(t, srv, 3)
	for i, in := range ins {
		if rate(in.w) != 10 {
			t.Fatalf("instance %d starts with rate %d, want 10", i, rate(in.w))
		}
	}
	start := time.Now()
	rev, err := etcd.Publish(context.Background(), srv.Client(), key, []byte(doc("20")), rulefile.LoadConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for i, in := range ins {
		select {
		case s := <-in.reloads:
			if s.Rules()[0].Limit.Rate != 20 {
				t.Errorf("instance %d reloaded rate %d, want 20", i, s.Rules()[0].Limit.Rate)
			}
		case <-time.After(bound - time.Since(start)):
			t.Fatalf("instance %d: the change did not arrive within %v", i, bound)
		}
	}
	took := time.Since(start)
	t.Logf("the change reached 3 instances in %v", took)
	if timing && took > time.Second {
		t.Errorf("the change took %v to reach 3 instances, want at most 1 s", took)
	}
	for i, in := range ins {
		if rate(in.w) != 20 || in.w.Revision() != rev || in.w.Err() != nil {
			t.Errorf("instance %d: rate %d revision %d (want %d) err %v", i, rate(in.w), in.w.Revision(), rev, in.w.Err())
		}
	}
}

// TestBadChangeRefusedEverywhere: a document with a mistake is refused on
// every instance with the same error, naming the document, the line, the
// rule and the field, and the rules in force stay; the next good change
// applies everywhere.
func TestBadChangeRefusedEverywhere(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Start(t)
	srv.Put(key, doc("10"))
	ins := watchers(t, srv, 3)
	before := make([]*rules.Set, len(ins))
	for i, in := range ins {
		before[i] = in.w.Current()
	}
	srv.Put(key, bad) // an operator's tool that does not check
	const want = `rulefile: etcd:/sluice/rules.yaml:4: rule "global": limit.per: "1fortnight"`
	var msgs []string
	for i, in := range ins {
		select {
		case err := <-in.errs:
			if !errors.Is(err, rulefile.ErrInvalidFile) || !strings.HasPrefix(err.Error(), want) {
				t.Errorf("instance %d refused with %v, want %q... wrapping rulefile.ErrInvalidFile", i, err, want)
			}
			msgs = append(msgs, err.Error())
		case <-time.After(5 * time.Second):
			t.Fatalf("instance %d did not refuse the change", i)
		}
		if in.w.Current() != before[i] || rate(in.w) != 10 {
			t.Errorf("instance %d: the rules in force changed", i)
		}
		if err := in.w.Err(); err == nil || err.Error() != msgs[i] {
			t.Errorf("instance %d: Err() = %v", i, err)
		}
	}
	for i := range msgs {
		if msgs[i] != msgs[0] {
			t.Errorf("instance %d refused with\n  %s\ninstance 0 with\n  %s", i, msgs[i], msgs[0])
		}
	}
	srv.Put(key, doc("30"))
	for i, in := range ins {
		select {
		case <-in.reloads:
		case <-time.After(5 * time.Second):
			t.Fatalf("instance %d did not apply the good change", i)
		}
		if rate(in.w) != 30 || in.w.Err() != nil {
			t.Errorf("instance %d: rate %d err %v after a good change", i, rate(in.w), in.w.Err())
		}
	}
}

// TestPublishRefusesBadDocument: Publish checks a document as the watchers
// do and does not write one with a mistake.
func TestPublishRefusesBadDocument(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Start(t)
	cli := srv.Client()
	rev, err := etcd.Publish(context.Background(), cli, key, []byte(doc("10")), rulefile.LoadConfig{})
	if err != nil || rev == 0 {
		t.Fatalf("Publish of a good document: %d %v", rev, err)
	}
	_, err = etcd.Publish(context.Background(), cli, key, []byte(bad), rulefile.LoadConfig{})
	if !errors.Is(err, rulefile.ErrInvalidFile) || !strings.Contains(err.Error(), `etcd:/sluice/rules.yaml:4: rule "global": limit.per`) {
		t.Errorf("Publish of a bad document: %v", err)
	}
	resp, err := cli.Get(context.Background(), key)
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != doc("10") || resp.Kvs[0].ModRevision != rev {
		t.Errorf("the key changed after a refused Publish: %v %v", resp, err)
	}
}

// TestEtcdGoneAndBack: while etcd is down the rules in force stay and keep
// limiting (through the middleware), and Reload says why it cannot read;
// when etcd is back, the watcher follows it again.
func TestEtcdGoneAndBack(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Start(t)
	srv.Put(key, doc("2"))
	in := watchers(t, srv, 1)[0]
	store := memstore.New(memstore.Config{SweepInterval: -1})
	defer store.Close(context.Background())
	lim, err := middleware.New(store, in.w)
	if err != nil {
		t.Fatal(err)
	}
	h := lim.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	codes := func() string {
		var got []string
		for range 3 {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
			got = append(got, http.StatusText(rec.Code))
		}
		return strings.Join(got, ",")
	}

	srv.Kill()
	if got := codes(); got != "OK,OK,Too Many Requests" {
		t.Errorf("with etcd down: %s, want the 2-a-minute rule in force", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	err = in.w.Reload(ctx)
	cancel()
	if err == nil || !strings.Contains(err.Error(), "reading the key from etcd") || rate(in.w) != 2 {
		t.Errorf("Reload with etcd down: %v, rate %d", err, rate(in.w))
	}
	<-in.errs // Reload reported it

	srv.Restart()
	srv.Put(key, doc("50"))
	select {
	case s := <-in.reloads:
		if s.Rules()[0].Limit.Rate != 50 {
			t.Errorf("after etcd returned: rate %d, want 50", s.Rules()[0].Limit.Rate)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the watcher did not follow etcd within 30 s of its return")
	}
	if in.w.Err() != nil {
		t.Errorf("Err() = %v after a good change", in.w.Err())
	}
}

// TestKeyDeleted: deleting the key is refused like a bad document; the
// rules stay until the key holds rules again.
func TestKeyDeleted(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Start(t)
	srv.Put(key, doc("10"))
	in := watchers(t, srv, 1)[0]
	if _, err := srv.Client().Delete(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-in.errs:
		if !errors.Is(err, etcd.ErrNoRules) || !errors.Is(err, rulefile.ErrInvalidFile) {
			t.Errorf("delete refused with %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the delete was not reported")
	}
	if rate(in.w) != 10 {
		t.Errorf("rate %d after the delete, want 10", rate(in.w))
	}
	srv.Put(key, doc("10")) // the same rules again: the watcher is no longer refusing
	select {
	case <-in.reloads:
	case <-time.After(5 * time.Second):
		t.Fatal("the key's return was not applied")
	}
	if in.w.Err() != nil {
		t.Errorf("Err() = %v", in.w.Err())
	}
}

// TestWithName: the name selects the syntax and starts the errors.
func TestWithName(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Start(t)
	srv.Put("/r", `{"rules": [{"name": "g", "key": "global", "limit": {"rate": 5, "per": "1s"}}]}`)
	w, err := etcd.Watch(context.Background(), srv.Client(), "/r", rulefile.LoadConfig{}, etcd.WithName("prod-rules.json"), etcd.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if rate(w) != 5 {
		t.Errorf("rate %d", rate(w))
	}
	srv.Put("/r", `{"rules": [}`)
	deadline := time.Now().Add(5 * time.Second)
	for w.Err() == nil && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if err := w.Err(); err == nil || !strings.HasPrefix(err.Error(), "rulefile: prod-rules.json:1:") {
		t.Errorf("Err() = %v", err)
	}
}

// TestAdminOverWatcher: the operator handler takes a Watcher as its rule
// source and sees the rules in force.
func TestAdminOverWatcher(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Start(t)
	srv.Put(key, doc("1"))
	in := watchers(t, srv, 1)[0]
	store := memstore.New(memstore.Config{SweepInterval: -1})
	defer store.Close(context.Background())
	lim, err := middleware.New(store, in.w)
	if err != nil {
		t.Fatal(err)
	}
	h := lim.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	send := func() int {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		return rec.Code
	}
	send()
	if c := send(); c != http.StatusTooManyRequests {
		t.Fatalf("second request: %d", c)
	}
	ops, err := admin.New(store, in.w)
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	ops.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/reset", strings.NewReader(`{"rule":"global","identity":""}`)))
	if rec.Code != http.StatusOK {
		body, _ := io.ReadAll(rec.Body)
		t.Fatalf("reset: %d %s", rec.Code, body)
	}
	if c := send(); c != http.StatusOK {
		t.Errorf("after the operator's reset: %d", c)
	}
}

// TestConcurrentReadsDuringChanges: requests read the rules while changes
// arrive (run with -race).
func TestConcurrentReadsDuringChanges(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Start(t)
	srv.Put(key, doc("1"))
	in := watchers(t, srv, 1)[0]
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
					if in.w.Current().Len() != 1 {
						t.Error("a Set without its rule")
						return
					}
				}
			}
		})
	}
	for _, r := range []string{"2", "3", "4", "5"} {
		srv.Put(key, doc(r))
	}
	deadline := time.Now().Add(5 * time.Second)
	for rate(in.w) != 5 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	if rate(in.w) != 5 {
		t.Errorf("rate %d after the last change, want 5", rate(in.w))
	}
}
