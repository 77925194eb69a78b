package redistest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// ClusterOptions configures StartCluster. The zero value is a cluster of 3
// masters with a replica each, node timeout 1 s, full coverage off.
type ClusterOptions struct {
	Masters  int           // default 3
	Replicas int           // replicas per master; default 1, -1 for none
	Timeout  time.Duration // cluster-node-timeout; default 1 s
	Args     []string      // appended to every node's command line
}

// Cluster is a Redis Cluster of redis-server processes started for a test
// on loopback, each stopped by its pid when the test ends.
type Cluster struct {
	// Nodes are the servers, masters first in creation order; roles change
	// when a replica is promoted.
	Nodes []*Server
	t     testing.TB
}

// slots is the number of hash slots of a Redis Cluster.
const slots = 16384

// StartCluster starts a cluster for t and waits until every slot is served
// and every replica is in sync. It uses only the servers' own commands
// (CLUSTER MEET, ADDSLOTS, REPLICATE), not redis-cli. Each node's port is
// chosen so that its bus port, 10000 above, is free too. Without
// redis-server it skips t, or fails it under REQUIRE_REDIS=1.
func StartCluster(t testing.TB, opts ClusterOptions) *Cluster {
	t.Helper()
	if opts.Masters == 0 {
		opts.Masters = 3
	}
	if opts.Replicas == 0 {
		opts.Replicas = 1
	}
	replicas := max(opts.Replicas, 0)
	if opts.Timeout == 0 {
		opts.Timeout = time.Second
	}
	c := &Cluster{t: t}
	args := append([]string{"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
		"--cluster-node-timeout", strconv.FormatInt(opts.Timeout.Milliseconds(), 10),
		"--cluster-require-full-coverage", "no"}, opts.Args...)
	for range opts.Masters * (1 + replicas) {
		c.Nodes = append(c.Nodes, startClusterNode(t, args))
	}
	ids := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		id, err := DoString(n.Addr, "CLUSTER", "MYID")
		if err != nil {
			t.Fatalf("redistest: cluster: %v", err)
		}
		ids[i] = id
		if i > 0 {
			must(t, n.Addr, "CLUSTER", "MEET", "127.0.0.1", strconv.Itoa(c.Nodes[0].Port))
		}
	}
	for m := range opts.Masters {
		from, to := m*slots/opts.Masters, (m+1)*slots/opts.Masters
		cmd := []string{"CLUSTER", "ADDSLOTS"}
		for s := from; s < to; s++ {
			cmd = append(cmd, strconv.Itoa(s))
		}
		must(t, c.Nodes[m].Addr, cmd...)
	}
	c.waitFor("every node to know every other", 20*time.Second, func() error {
		for _, n := range c.Nodes {
			s, err := DoString(n.Addr, "CLUSTER", "NODES")
			if err != nil {
				return err
			}
			if got := strings.Count(strings.TrimSpace(s), "\n") + 1; got != len(c.Nodes) {
				return fmt.Errorf("%s knows %d nodes of %d", n.Addr, got, len(c.Nodes))
			}
		}
		return nil
	})
	for r := range replicas {
		for m := range opts.Masters {
			n := c.Nodes[opts.Masters*(1+r)+m]
			must(t, n.Addr, "CLUSTER", "REPLICATE", ids[m])
		}
	}
	c.waitFor("the cluster to be ready", 30*time.Second, c.ready)
	return c
}

// startClusterNode starts one node on a port whose bus port is free too.
func startClusterNode(t testing.TB, args []string) *Server {
	t.Helper()
	bin := Binary(t)
	var lastErr error
	for range 20 {
		port := 20000 + rand.IntN(25000)
		if !portFree(port) || !portFree(port+10000) {
			continue
		}
		s, err := launch(bin, Options{Dir: t.TempDir(), Port: port, Args: args})
		if err != nil {
			lastErr = err
			continue
		}
		s.t = t
		t.Cleanup(s.Stop)
		return s
	}
	t.Fatalf("redistest: no free port pair for a cluster node: %v", lastErr)
	return nil
}

func portFree(port int) bool {
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// ready reports why the cluster is not yet serving every slot with every
// replica in sync, or nil.
func (c *Cluster) ready() error {
	for _, n := range c.Live() {
		info, err := DoString(n.Addr, "CLUSTER", "INFO")
		if err != nil {
			return err
		}
		if !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_slots_ok:"+strconv.Itoa(slots)) {
			return fmt.Errorf("%s: cluster not ok", n.Addr)
		}
		repl, err := Info(n.Addr, "replication")
		if err != nil {
			return err
		}
		if repl["role"] == "slave" && repl["master_link_status"] != "up" {
			return fmt.Errorf("%s: replica link %s", n.Addr, repl["master_link_status"])
		}
	}
	return nil
}

// Addrs returns the addresses of the nodes that are running, for a
// client's seed list.
func (c *Cluster) Addrs() []string {
	var a []string
	for _, n := range c.Live() {
		a = append(a, n.Addr)
	}
	return a
}

// Live returns the nodes that are running.
func (c *Cluster) Live() []*Server {
	var live []*Server
	for _, n := range c.Nodes {
		if n.Pid() != 0 {
			live = append(live, n)
		}
	}
	return live
}

// Slot returns the hash slot of key, as the cluster computes it.
func (c *Cluster) Slot(key string) int {
	c.t.Helper()
	v, err := Do(c.Live()[0].Addr, "CLUSTER", "KEYSLOT", key)
	n, ok := v.(int64)
	if err != nil || !ok {
		c.t.Fatalf("redistest: CLUSTER KEYSLOT: %v %v", v, err)
	}
	return int(n)
}

// MasterOf returns the running node that serves slot as a master, as the
// running nodes see it, or nil when none does.
func (c *Cluster) MasterOf(slot int) *Server {
	for _, n := range c.Live() {
		repl, err := Info(n.Addr, "replication")
		if err != nil || repl["role"] != "master" {
			continue
		}
		nodes, err := DoString(n.Addr, "CLUSTER", "NODES")
		if err != nil {
			continue
		}
		for _, line := range strings.Split(strings.TrimSpace(nodes), "\n") {
			f := strings.Fields(line)
			if len(f) < 9 || !strings.Contains(f[2], "myself") {
				continue
			}
			for _, r := range f[8:] {
				lo, hi, isRange := strings.Cut(r, "-")
				a, err1 := strconv.Atoi(lo)
				b := a
				var err2 error
				if isRange {
					b, err2 = strconv.Atoi(hi)
				}
				if err1 == nil && err2 == nil && a <= slot && slot <= b {
					return n
				}
			}
		}
	}
	return nil
}

// WaitFailover waits until a running node serves slot as a master again,
// after its master was stopped, and returns that node.
func (c *Cluster) WaitFailover(slot int, timeout time.Duration) *Server {
	c.t.Helper()
	var m *Server
	c.waitFor(fmt.Sprintf("a master for slot %d", slot), timeout, func() error {
		if m = c.MasterOf(slot); m == nil {
			return errors.New("no master yet")
		}
		return nil
	})
	return m
}

// WaitReady waits until every slot is served and the running replicas are
// in sync.
func (c *Cluster) WaitReady(timeout time.Duration) {
	c.t.Helper()
	c.waitFor("the cluster to be ready", timeout, c.ready)
}

func (c *Cluster) waitFor(what string, timeout time.Duration, f func() error) {
	c.t.Helper()
	if err := poll(timeout, f); err != nil {
		c.t.Fatalf("redistest: waiting for %s: %v", what, err)
	}
}

// poll calls f until it returns nil or timeout passes, and returns its last
// error then.
func poll(timeout time.Duration, f func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func must(t testing.TB, addr string, args ...string) {
	t.Helper()
	v, err := Do(addr, args...)
	if err == nil {
		if re, ok := v.(ReplyError); ok {
			err = re
		}
	}
	if err != nil {
		t.Fatalf("redistest: %s %s: %v", addr, strings.Join(args[:min(len(args), 3)], " "), err)
	}
}
