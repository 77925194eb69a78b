package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/store/redisstore"
	"github.com/sluicehq/sluice/store/storetest"
)

// records is a slog handler that keeps every record it receives, each as
// its level and its message followed by its attributes.
type records struct {
	mu  sync.Mutex
	all []record
}

type record struct {
	level slog.Level
	text  string
}

func (*records) Enabled(context.Context, slog.Level) bool { return true }

func (l *records) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%q", a.Key, a.Value.String())
		return true
	})
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all = append(l.all, record{r.Level, b.String()})
	return nil
}

func (l *records) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *records) WithGroup(string) slog.Handler      { return l }

// atLeast returns the records of level min or above.
func (l *records) atLeast(min slog.Level) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, r := range l.all {
		if r.level >= min {
			out = append(out, r.level.String()+" "+r.text)
		}
	}
	return out
}

// containing returns the records whose text contains substr.
func (l *records) containing(substr string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, r := range l.all {
		if strings.Contains(r.text, substr) {
			out = append(out, r.level.String()+" "+r.text)
		}
	}
	return out
}

const aclPassword = "acl-test-password"

// documentedACL returns the ACL SETUSER commands docs/operations.md gives
// for the store's user, with the test's password: the first for every
// topology, the second for Redis Cluster.
func documentedACL(t testing.TB) (all, cluster []string) {
	t.Helper()
	doc, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	var lines [][]string
	for l := range strings.SplitSeq(string(doc), "\n") {
		if strings.HasPrefix(l, "ACL SETUSER sluice ") {
			lines = append(lines, strings.Fields(strings.ReplaceAll(l, ">PASSWORD", ">"+aclPassword)))
		}
	}
	if len(lines) != 2 {
		t.Fatalf("docs/operations.md has %d ACL SETUSER lines for the store's user, want 2", len(lines))
	}
	pkg, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	first := strings.Join(lines[0], " ")
	if !strings.Contains(string(pkg), "//\t"+strings.ReplaceAll(first, ">"+aclPassword, ">PASSWORD")+"\n") {
		t.Fatalf("the package documentation does not give the ACL of docs/operations.md:\n%s", first)
	}
	return lines[0], lines[1]
}

// setUser runs an ACL SETUSER command (its words) as the default user at
// each of addrs.
func setUser(t testing.TB, acl []string, addrs ...string) {
	t.Helper()
	for _, addr := range addrs {
		v, err := redistest.Do(addr, acl...)
		if err == nil {
			if re, ok := v.(redistest.ReplyError); ok {
				err = re
			}
		}
		if err != nil {
			t.Fatalf("%s: %s: %v", addr, strings.Join(acl, " "), err)
		}
	}
}

// userClient returns a single node's client at addr that logs in as user.
func userClient(t testing.TB, addr, user string) *redis.Client {
	t.Helper()
	opt := safeOptions(addr)
	opt.Username, opt.Password = user, aclPassword
	c := redis.NewClient(opt)
	t.Cleanup(func() { c.Close() })
	return c
}

// TestConformanceAsACLUser runs the conformance suite as the ACL user
// docs/operations.md documents, on a single node and on Redis Cluster, then
// the calls the suite makes on a test clock with the server's clock (TIME),
// after the server lost the scripts (EVAL): nothing fails and nothing is
// logged above info.
func TestConformanceAsACLUser(t *testing.T) {
	t.Parallel()
	acl, clusterACL := documentedACL(t)
	t.Run("single", func(t *testing.T) {
		srv := redistest.Start(t)
		setUser(t, acl, srv.Addr)
		storetest.Run(t, func(t *testing.T) storetest.Harness {
			clock := storetest.NewClock(time.Now())
			return storetest.Harness{
				Store: newStore(t, userClient(t, srv.Addr, "sluice"), clock), SetTime: clock.Set, Atomic: true,
				Clients: func(t *testing.T, n int) []sluice.Store {
					stores := make([]sluice.Store, n)
					for i := range stores {
						stores[i] = newStore(t, userClient(t, srv.Addr, "sluice"), clock)
					}
					return stores
				},
			}
		})
		var logs records
		feed, _ := newPolicyFeed(t)
		s, err := redisstore.New(userClient(t, srv.Addr, "sluice"), redisstore.Config{Logger: slog.New(&logs), Secret: []byte("test secret"), Events: feed})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close(context.Background())
		redisstore.WaitStartupCheck(s)
		checkPolicyUnknown(t, feed, &logs, srv.Addr)
		waitConnsReady(t, s)
		if err := aclWorkload(s, "", func() { flushScripts(t, srv.Addr) }); err != nil {
			t.Fatal(err)
		}
		if warned := logs.atLeast(slog.LevelWarn); len(warned) > 0 {
			t.Fatalf("logged as the documented ACL user: %q", warned)
		}
	})
	t.Run("cluster", func(t *testing.T) {
		c := redistest.StartCluster(t, redistest.ClusterOptions{Replicas: -1})
		setUser(t, acl, c.Addrs()...)
		setUser(t, clusterACL, c.Addrs()...)
		userCluster := func(t *testing.T) *redis.ClusterClient {
			opt := clusterOptions(c.Addrs())
			opt.Username, opt.Password = "sluice", aclPassword
			cc := redis.NewClusterClient(opt)
			t.Cleanup(func() { cc.Close() })
			return cc
		}
		storetest.Run(t, func(t *testing.T) storetest.Harness {
			clock := storetest.NewClock(time.Now())
			return storetest.Harness{
				Store: newStore(t, userCluster(t), clock), SetTime: clock.Set, Atomic: true,
				Clients: func(t *testing.T, n int) []sluice.Store {
					stores := make([]sluice.Store, n)
					for i := range stores {
						stores[i] = newStore(t, userCluster(t), clock)
					}
					return stores
				},
			}
		})
		var logs records
		feed, _ := newPolicyFeed(t)
		s, err := redisstore.New(userCluster(t), redisstore.Config{Logger: slog.New(&logs), Secret: []byte("test secret"), Events: feed})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close(context.Background())
		redisstore.WaitStartupCheck(s)
		checkPolicyUnknown(t, feed, &logs, c.Addrs()...)
		if err := aclWorkload(s, "", func() {
			for _, a := range c.Addrs() {
				flushScripts(t, a)
			}
		}); err != nil {
			t.Fatal(err)
		}
		if warned := logs.atLeast(slog.LevelWarn); len(warned) > 0 {
			t.Fatalf("logged as the documented ACL user: %q", warned)
		}
	})
}

// checkPolicyUnknown checks that the start-up check of a store whose user
// may not run CONFIG GET reported the policy of each of endpoints as
// unknown, and said so once for each, at info level.
func checkPolicyUnknown(t testing.TB, feed *policyFeed, logs *records, endpoints ...string) {
	t.Helper()
	var got []string
	for range endpoints {
		r := feed.next(t)
		if r.policy != "" || r.evicting {
			t.Fatalf("reading %+v, want an unknown policy", r)
		}
		got = append(got, r.endpoint)
	}
	slices.Sort(got)
	want := slices.Sorted(slices.Values(endpoints))
	if !slices.Equal(got, want) {
		t.Fatalf("readings for %v, want %v", got, want)
	}
	said := logs.containing("CONFIG GET")
	if len(said) != len(endpoints) || !strings.HasPrefix(said[0], "INFO ") || !strings.Contains(said[0], "+config|get") {
		t.Fatalf("logged %q, want one info line per endpoint naming +config|get", said)
	}
}

// flushScripts empties the script cache of the server at addr, as the
// default user.
func flushScripts(t testing.TB, addr string) {
	t.Helper()
	if _, err := redistest.Do(addr, "SCRIPT", "FLUSH"); err != nil {
		t.Fatal(err)
	}
}

// aclWorkload runs every kind of call the store makes on the server's
// clock, after flush made the server lose the scripts (so the first is
// sent again with EVAL): a hit of each algorithm, a request of two new
// buckets, a refund of a sliding log's take, and a reset, on buckets whose
// keys start with prefix. It returns the calls' errors, joined.
func aclWorkload(s *redisstore.Store, prefix string, flush func()) error {
	ctx := context.Background()
	flush()
	var errs []error
	take := func(hits ...sluice.Hit) []sluice.Result {
		out := make([]sluice.Result, len(hits))
		if err := s.Take(ctx, hits, out); err != nil {
			errs = append(errs, err)
		}
		return out
	}
	limit := sluice.PerMinute(10)
	var all []sluice.Hit
	for i, alg := range []sluice.Algorithm{sluice.TokenBucket, sluice.SlidingWindow, sluice.FixedWindow} {
		h := sluice.Hit{Key: fmt.Sprint(prefix, "acl-single-", i), Algorithm: alg, Limit: limit, Cost: 1}
		all = append(all, h)
		if out := take(h); len(errs) == 0 && !out[0].Allowed {
			errs = append(errs, fmt.Errorf("%v: refused a fresh bucket", alg))
		}
	}
	log := sluice.Hit{Key: prefix + "acl-log", Algorithm: sluice.SlidingLog, Limit: limit, Cost: 2}
	all = append(all, log)
	if out := take(log); out[0].Allowed {
		if err := s.Refund(ctx, []sluice.Refund{{Hit: log, Receipt: out[0].Receipt, Units: 1}}); err != nil {
			errs = append(errs, err)
		}
	}
	pair := []sluice.Hit{
		{Key: prefix + "acl-pair-1", Limit: limit, Cost: 1},
		{Key: prefix + "acl-pair-2", Algorithm: sluice.SlidingWindow, Limit: limit, Cost: 1},
	}
	all = append(all, pair...)
	take(pair...)
	if err := s.Reset(ctx, all); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// TestEachACLPermissionIsNeeded takes each permission of the documented
// ACL away in turn: the store's calls then fail with a configuration error
// naming it, which the breaker does not count, or, for the one the store
// can do without (loading its scripts ahead), its start-up check warns
// naming it. A bucket whose read is refused is never read as empty.
func TestEachACLPermissionIsNeeded(t *testing.T) {
	t.Parallel() // its own redis-server; no package state, no timing
	acl, _ := documentedACL(t)
	srv := redistest.Start(t)
	i := slices.Index(acl, "-@all")
	if i < 0 {
		t.Fatalf("the documented ACL %q has no -@all", acl)
	}
	head, perms := acl[:i+1], acl[i+1:]
	for n, perm := range perms {
		t.Run(perm, func(t *testing.T) {
			user := fmt.Sprint("without-", n)
			rule := append([]string{"ACL", "SETUSER", user}, head[3:]...)
			rule = append(rule, slices.Delete(slices.Clone(perms), n, n+1)...)
			setUser(t, rule, srv.Addr)
			var logs records
			s, err := redisstore.New(userClient(t, srv.Addr, user), redisstore.Config{
				Logger: slog.New(&logs), Secret: []byte("test secret"),
				Breaker: redisstore.BreakerConfig{Failures: 2},
			})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close(context.Background())
			redisstore.WaitStartupCheck(s)
			if perm != "+ping" {
				waitConnsReady(t, s)
			}
			err = aclWorkload(s, perm, func() { flushScripts(t, srv.Addr) })
			if perm == "+script|load" || perm == "+zcard" { // the store decides; it cannot count its instances
				if err != nil {
					t.Fatalf("without %s: %v", perm, err)
				}
				if len(logs.containing(perm)) == 0 {
					t.Fatalf("without %s, nothing logged naming it: %q", perm, logs.atLeast(slog.LevelDebug))
				}
				return
			}
			if !errors.Is(err, redisstore.ErrNoPermission) || !errors.Is(err, sluice.ErrInvalidConfig) {
				t.Fatalf("without %s: err = %v, want ErrNoPermission", perm, err)
			}
			if !strings.Contains(err.Error(), perm) {
				t.Fatalf("without %s: err = %v, want it to name %s", perm, err, perm)
			}
			if errors.Is(err, sluice.ErrUnavailable) || errors.Is(err, sluice.ErrTimeout) {
				t.Fatalf("without %s: err = %v, reported as an outage", perm, err)
			}
			if st := s.BreakerState(); st != sluice.BreakerClosed {
				t.Fatalf("without %s: breaker %v after failed calls, want closed", perm, st)
			}
		})
	}
}

// TestRefusedReadNeverEmptiesABucket: a user that may write but not read
// (no +get, no +zrangebyscore) is refused, and the bucket it could not
// read is neither read as empty, which would admit a request its bucket
// refuses, nor replaced.
func TestRefusedReadNeverEmptiesABucket(t *testing.T) {
	t.Parallel() // its own redis-server; no package state, no timing
	acl, _ := documentedACL(t)
	srv := redistest.Start(t)
	rule := []string{"ACL", "SETUSER", "writer"}
	for _, w := range acl[3:] {
		if w != "+get" && w != "+zrangebyscore" {
			rule = append(rule, w)
		}
	}
	setUser(t, rule, srv.Addr)
	admin := newStore(t, newClient(t, srv.Addr), nil)
	writer := newStore(t, userClient(t, srv.Addr, "writer"), nil)
	ctx := context.Background()
	for _, alg := range []sluice.Algorithm{sluice.TokenBucket, sluice.SlidingWindow, sluice.FixedWindow, sluice.SlidingLog} {
		t.Run(alg.String(), func(t *testing.T) {
			hit := sluice.Hit{Key: "spent-" + alg.String(), Algorithm: alg, Limit: sluice.PerHour(2), Cost: 2}
			out := make([]sluice.Result, 1)
			if err := admin.Take(ctx, []sluice.Hit{hit}, out); err != nil || !out[0].Allowed {
				t.Fatalf("spending the bucket: %+v, %v", out[0], err)
			}
			err := writer.Take(ctx, []sluice.Hit{hit}, out)
			if !errors.Is(err, redisstore.ErrNoPermission) || out[0].Allowed {
				t.Fatalf("a take whose read was refused: %+v, %v; want ErrNoPermission", out[0], err)
			}
			if got := peek(t, admin, hit); got.Remaining != 0 {
				t.Fatalf("the bucket has %d left after the refused take, want 0", got.Remaining)
			}
		})
	}
}
