package redistest

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestClusterServesEverySlotAndFailsOver(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, ClusterOptions{})
	if len(c.Nodes) != 6 {
		t.Fatalf("%d nodes, want 6", len(c.Nodes))
	}
	masters := 0
	for _, n := range c.Nodes {
		repl, err := Info(n.Addr, "replication")
		if err != nil {
			t.Fatal(err)
		}
		if repl["role"] == "master" {
			masters++
		}
	}
	if masters != 3 {
		t.Fatalf("%d masters, want 3", masters)
	}
	slot := c.Slot("{user:42}")
	m := c.MasterOf(slot)
	if m == nil {
		t.Fatalf("no master for slot %d", slot)
	}
	if _, err := DoString(m.Addr, "SET", "{user:42}", "x"); err != nil {
		t.Fatalf("SET on the slot's master: %v", err)
	}
	if err := WaitReplicated(m.Addr, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	other := c.Nodes[0]
	if other == m {
		other = c.Nodes[1]
	}
	if v, _ := Do(other.Addr, "GET", "{user:42}"); !strings.HasPrefix(toString(v), "MOVED") {
		t.Fatalf("GET on another node: %v, want MOVED", v)
	}
	killed := time.Now()
	m.Kill()
	promoted := c.WaitFailover(slot, 20*time.Second)
	if promoted == m {
		t.Fatal("the killed master still serves the slot")
	}
	t.Logf("slot %d: replica %s promoted %v after the kill", slot, promoted.Addr, time.Since(killed).Round(time.Millisecond))
	if v, err := DoString(promoted.Addr, "GET", "{user:42}"); err != nil || v != "x" {
		t.Fatalf("GET on the promoted replica: %q %v", v, err)
	}
}

func TestSentinelSwitchesPrimary(t *testing.T) {
	t.Parallel()
	s := StartSentinel(t)
	old, err := s.Primary()
	if err != nil || old != s.Data[0].Addr {
		t.Fatalf("primary %q %v, want %s", old, err, s.Data[0].Addr)
	}
	killed := time.Now()
	s.Data[0].Kill()
	now := s.WaitSwitch(old, 30*time.Second)
	if now != s.Data[1].Addr {
		t.Fatalf("new primary %s, want the replica %s", now, s.Data[1].Addr)
	}
	t.Logf("switch-master %v after the kill", time.Since(killed).Round(time.Millisecond))
	repl, err := Info(now, "replication")
	if err != nil || repl["role"] != "master" {
		t.Fatalf("the new primary's role: %v %v", repl["role"], err)
	}
}

func TestDo(t *testing.T) {
	t.Parallel()
	s := Start(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"PING"}, "PONG"},
		{[]string{"SET", "k", "v"}, "OK"},
		{[]string{"GET", "k"}, "v"},
		{[]string{"GET", "missing"}, ""},
		{[]string{"INCR", "n"}, "1"},
		{[]string{"NOSUCHCOMMAND"}, "ERR unknown command"},
		{[]string{"MGET", "k", "missing"}, "[v ]"},
	} {
		v, err := Do(s.Addr, tc.args...)
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if got := toString(v); !strings.HasPrefix(got, tc.want) {
			t.Errorf("%v: %q, want %q", tc.args, got, tc.want)
		}
	}
}

func toString(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case ReplyError:
		return string(v)
	case int64:
		return strconv.FormatInt(v, 10)
	case []any:
		parts := make([]string, len(v))
		for i, x := range v {
			parts[i] = toString(x)
		}
		return "[" + strings.Join(parts, " ") + "]"
	}
	return ""
}
