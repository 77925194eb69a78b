package redisstore_test

import (
	"context"
	"errors"
	"net"
	"os"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/store/redisstore"
)

// BenchmarkCluster measures one request of 4 token-bucket rules,
// sequentially, on a single node and on a 3-master cluster: spread over the
// 3 masters (one script per slot in one pipeline), co-located by one group
// (one script), and as 4 sequential one-rule calls; "single (A/A)" is a
// second, identical single-node store, the control for noise. Each shape
// runs on loopback and again with an emulated network round trip (rtt=...:
// every connection's replies reach the client that much later, see
// dialDelayed), so the loopback rows show what CPU costs when the servers
// and the client share the cores, and the others what round trips cost.
// Besides ns/op it reports the median call (p50-µs). Compare the rows of
// one run, whose rounds interleave the variants (see benchRounds; a
// repeated row is named name#01, name#02):
//
//	REQUIRE_REDIS=1 go test -run '^$' -bench 'BenchmarkCluster$' -benchtime 2000x ./store/redisstore/
func BenchmarkCluster(b *testing.B) {
	srv := redistest.Start(b)
	c := redistest.StartCluster(b, redistest.ClusterOptions{Replicas: -1})
	ctx := context.Background()
	sequential := func(s *redisstore.Store, hits []sluice.Hit, out []sluice.Result) error {
		for i := range hits {
			if err := s.Take(ctx, hits[i:i+1], out[i:i+1]); err != nil {
				return err
			}
		}
		return nil
	}
	one := func(s *redisstore.Store, hits []sluice.Hit, out []sluice.Result) error { return s.Take(ctx, hits, out) }
	type shape struct {
		name string
		s    *redisstore.Store
		hits []sluice.Hit
		take func(*redisstore.Store, []sluice.Hit, []sluice.Result) error
	}
	var shapes []shape
	for _, rtt := range []time.Duration{0, 250 * time.Microsecond, 500 * time.Microsecond} {
		net := "loopback"
		single := func() *redisstore.Store { return newStore(b, newClient(b, srv.Addr), nil) }
		cluster := newStore(b, newClusterClient(b, c.Addrs()), nil)
		if rtt > 0 {
			net = "rtt=" + rtt.String()
			single = func() *redisstore.Store {
				opt := safeOptions(srv.Addr)
				opt.Dialer = dialDelayed(rtt)
				client := redis.NewClient(opt)
				b.Cleanup(func() { client.Close() })
				return newStore(b, client, nil)
			}
			opt := clusterOptions(c.Addrs())
			opt.Dialer = dialDelayed(rtt)
			client := redis.NewClusterClient(opt)
			b.Cleanup(func() { client.Close() })
			cluster = newStore(b, client, nil)
		}
		spread := spreadHits(b, cluster, c, 4)
		colocated := slices.Clone(spread)
		for i := range colocated {
			colocated[i].Group = "bench-user"
		}
		shapes = append(shapes,
			shape{net + "/single", single(), spread, one},
			shape{net + "/single (A/A)", single(), spread, one},
			shape{net + "/cluster, 3 nodes", cluster, spread, one},
			shape{net + "/cluster, co-located", cluster, colocated, one},
			shape{net + "/cluster, 4 sequential calls", cluster, spread, sequential},
		)
	}
	for range benchRounds() {
		for _, bc := range shapes {
			b.Run(bc.name, func(b *testing.B) {
				out := make([]sluice.Result, len(bc.hits))
				var took []time.Duration
				b.ReportAllocs()
				for b.Loop() {
					start := time.Now()
					if err := bc.take(bc.s, bc.hits, out); err != nil {
						b.Fatal(err)
					}
					took = append(took, time.Since(start))
				}
				slices.Sort(took)
				b.ReportMetric(float64(took[len(took)/2].Microseconds()), "p50-µs")
			})
		}
	}
}

// benchRounds is how many times the cluster benchmarks run each of their
// variants, one round of all the variants after another, so that load that
// drifts during the run falls on all of them alike (-count would run each
// variant's repetitions back to back): SLUICE_BENCH_ROUNDS, default 3.
func benchRounds() int {
	if n, err := strconv.Atoi(os.Getenv("SLUICE_BENCH_ROUNDS")); err == nil && n > 0 {
		return n
	}
	return 3
}

// spreadHits returns n hits whose keys lie on as many masters as the
// cluster has, with a limit they never reach.
func spreadHits(b *testing.B, s *redisstore.Store, c *redistest.Cluster, n int) []sluice.Hit {
	var hits []sluice.Hit
	used := map[string]int{}
	for i := 0; len(hits) < n; i++ {
		h := sluice.Hit{Key: "bench-rule-" + strconv.Itoa(i), Limit: benchLimit, Cost: 1}
		m := c.MasterOf(redisstore.SlotOf(redisstore.KeyOf(s, h)))
		if m == nil || used[m.Addr] > (n-1)/len(c.Nodes) {
			continue
		}
		used[m.Addr]++
		hits = append(hits, h)
	}
	return hits
}

// BenchmarkClusterThroughput measures one-rule checks from 64 goroutines on
// 10k keys, on a single node and on a 3-master cluster, coalesced and not,
// and reports checks/s and the servers' CPU per check (user + system,
// summed over the nodes, from INFO cpu); coalesced is the default
// configuration. Three servers share the machine's cores with the client
// here: per-check cost is what scales.
//
//	REQUIRE_REDIS=1 go test -run '^$' -bench ClusterThroughput -benchtime 3s ./store/redisstore/
func BenchmarkClusterThroughput(b *testing.B) {
	srv := redistest.Start(b)
	c := redistest.StartCluster(b, redistest.ClusterOptions{Replicas: -1})
	ks := benchKeys(10_000)
	variants := []struct {
		name     string
		cluster  bool
		coalesce int
	}{
		{"single", false, -1}, {"cluster", true, -1},
		{"single/coalesced", false, 0}, {"cluster/coalesced", true, 0},
	}
	for range benchRounds() {
		for _, bc := range variants {
			b.Run(bc.name, func(b *testing.B) {
				var s *redisstore.Store
				addrs := []string{srv.Addr}
				if bc.cluster {
					s = newStoreWith(b, newClusterClient(b, c.Addrs()), nil, redisstore.Config{Coalesce: bc.coalesce})
					addrs = c.Addrs()
				} else {
					s = newStoreWith(b, newClient(b, srv.Addr), nil, redisstore.Config{Coalesce: bc.coalesce})
				}
				cpu := serversCPU(b, addrs...)
				before, start := cpu(), time.Now()
				takeInParallel(b, s, ks, sluice.Hit{Limit: benchLimit, Cost: 1})
				elapsed := time.Since(start)
				b.ReportMetric(float64(b.N)/elapsed.Seconds(), "checks/s")
				b.ReportMetric((cpu()-before)*1e6/float64(b.N), "server-cpu-µs/check")
			})
		}
	}
}

// BenchmarkClusterCrossSlot measures requests of two rules in different
// slots (a per-user rule over 10k users and a global rule every request
// hits) from 64 goroutines on a 3-master cluster, with coalescing off and
// on (the default), each variant run twice (A/A), in rounds (see
// benchRounds), and reports checks/s (a check is one request of two rules)
// and the servers' CPU per check:
//
//	REQUIRE_REDIS=1 go test -run '^$' -bench ClusterCrossSlot -benchtime 2s ./store/redisstore/
func BenchmarkClusterCrossSlot(b *testing.B) {
	c := redistest.StartCluster(b, redistest.ClusterOptions{Replicas: -1})
	users := benchKeys(10_000)
	variants := []struct {
		name     string
		coalesce int
	}{
		{"off", -1}, {"coalesced", 0}, {"off (A/A)", -1}, {"coalesced (A/A)", 0},
	}
	for range benchRounds() {
		for _, bc := range variants {
			b.Run(bc.name, func(b *testing.B) {
				s := newStoreWith(b, newClusterClient(b, c.Addrs()), nil, redisstore.Config{Coalesce: bc.coalesce})
				global := sluice.Hit{Key: "bench-global", Limit: benchLimit, Cost: 1}
				if redisstore.SlotOf(redisstore.KeyOf(s, global)) == redisstore.SlotOf(redisstore.KeyOf(s, sluice.Hit{Key: users[0], Limit: benchLimit})) {
					b.Fatal("the global rule shares a user's slot")
				}
				cpu := serversCPU(b, c.Addrs()...)
				before, start := cpu(), time.Now()
				takeInParallel(b, s, users, sluice.Hit{Limit: benchLimit, Cost: 1}, global)
				elapsed := time.Since(start)
				b.ReportMetric(float64(b.N)/elapsed.Seconds(), "checks/s")
				b.ReportMetric((cpu()-before)*1e6/float64(b.N), "server-cpu-µs/check")
			})
		}
	}
}

// serversCPU returns a function reading the CPU time (user + system, in
// seconds) the servers at addrs have used, summed.
func serversCPU(b *testing.B, addrs ...string) func() float64 {
	return func() float64 {
		var sum float64
		for _, a := range addrs {
			info, err := redistest.Info(a, "cpu")
			if err != nil {
				b.Fatal(err)
			}
			for _, f := range []string{"used_cpu_user", "used_cpu_sys"} {
				v, _ := strconv.ParseFloat(info[f], 64)
				sum += v
			}
		}
		return sum
	}
}

// dialDelayed returns a go-redis Dialer whose connections deliver what the
// server sends delay after it arrived, in order, as a network whose round
// trip is longer by delay would; what the client writes goes out at once.
// A goroutine per connection reads the socket into a delay line; Read takes
// from it, waiting for each chunk's time, within the read deadline go-redis
// sets.
func dialDelayed(delay time.Duration) func(context.Context, string, string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		var d net.Dialer
		conn, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		c := &delayConn{Conn: conn, delay: delay, line: make(chan delayed, 64), closed: make(chan struct{})}
		go c.fill()
		return c, nil
	}
}

// delayed is data read from the socket and due to the reader at due, or
// the socket's error.
type delayed struct {
	data []byte
	due  time.Time
	err  error
}

type delayConn struct {
	net.Conn
	delay  time.Duration
	line   chan delayed
	closed chan struct{}
	once   sync.Once

	mu       sync.Mutex
	deadline time.Time // the read deadline, kept here: fill reads without one

	rest []byte // what the last chunk had beyond the last Read
	err  error  // the socket's error, once the line has delivered it
}

func (c *delayConn) fill() {
	buf := make([]byte, 16<<10)
	for {
		n, err := c.Conn.Read(buf)
		var d delayed
		if n > 0 {
			d = delayed{data: append([]byte(nil), buf[:n]...), due: time.Now().Add(c.delay)}
		} else if err != nil {
			d = delayed{err: err}
		}
		select {
		case c.line <- d:
		case <-c.closed:
			return
		}
		if err != nil && n == 0 {
			return
		}
	}
}

func (c *delayConn) Read(p []byte) (int, error) {
	if len(c.rest) == 0 {
		if c.err != nil {
			return 0, c.err
		}
		d, err := c.next()
		if err != nil {
			return 0, err
		}
		if d.err != nil {
			c.err = d.err
			return 0, d.err
		}
		for wait := time.Until(d.due); wait > 0; wait = time.Until(d.due) {
			// Not time.Sleep: the runtime's timers wake up to a millisecond
			// late when it is idle, longer than the delays emulated here.
			// The kernel's sleep is late by its timer slack, about 50 µs.
			ts := syscall.NsecToTimespec(wait.Nanoseconds())
			_ = syscall.Nanosleep(&ts, nil) // EINTR: again
		}
		c.rest = d.data
	}
	n := copy(p, c.rest)
	c.rest = c.rest[n:]
	return n, nil
}

// next takes the next chunk off the line, waiting for it until the read
// deadline.
func (c *delayConn) next() (delayed, error) {
	select {
	case d := <-c.line:
		return d, nil
	default:
	}
	c.mu.Lock()
	deadline := c.deadline
	c.mu.Unlock()
	var timeout <-chan time.Time
	if !deadline.IsZero() {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		timeout = t.C
	}
	select {
	case d := <-c.line:
		return d, nil
	case <-timeout:
		return delayed{}, os.ErrDeadlineExceeded
	case <-c.closed:
		return delayed{}, net.ErrClosed
	}
}

func (c *delayConn) SetDeadline(t time.Time) error {
	c.setReadDeadline(t)
	return c.Conn.SetWriteDeadline(t)
}

func (c *delayConn) SetReadDeadline(t time.Time) error {
	c.setReadDeadline(t)
	return nil
}

func (c *delayConn) setReadDeadline(t time.Time) {
	c.mu.Lock()
	c.deadline = t
	c.mu.Unlock()
}

func (c *delayConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	err := c.Conn.Close()
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}
