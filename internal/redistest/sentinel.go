package redistest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// MasterName is the name the sentinels of StartSentinel monitor.
const MasterName = "sluice"

// Sentinels is a Sentinel-managed primary and replica with three sentinels
// (quorum 2, down-after-milliseconds 1000), started for a test on loopback.
type Sentinels struct {
	// Data are the primary and the replica, in their starting roles.
	Data []*Server
	// Sentinels are the three sentinels.
	Sentinels []*Server
	t         testing.TB
}

// StartSentinel starts the set for t and waits until every sentinel knows
// the primary, the replica and the other sentinels. Without redis-server it
// skips t, or fails it under REQUIRE_REDIS=1.
func StartSentinel(t testing.TB) *Sentinels {
	t.Helper()
	primary := Start(t)
	replica := Start(t, "--replicaof", "127.0.0.1", strconv.Itoa(primary.Port))
	s := &Sentinels{Data: []*Server{primary, replica}, t: t}
	for range 3 {
		dir := t.TempDir()
		conf := filepath.Join(dir, "sentinel.conf")
		body := fmt.Sprintf("sentinel monitor %s 127.0.0.1 %d 2\n"+
			"sentinel down-after-milliseconds %[1]s 1000\n"+
			"sentinel failover-timeout %[1]s 5000\n"+
			"sentinel parallel-syncs %[1]s 1\n", MasterName, primary.Port)
		if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		s.Sentinels = append(s.Sentinels, StartWith(t, Options{Dir: dir, ConfigFile: conf, Args: []string{"--sentinel"}}))
	}
	err := poll(30*time.Second, func() error {
		for _, sn := range s.Sentinels {
			info, err := Info(sn.Addr, "sentinel")
			if err != nil {
				return err
			}
			want := fmt.Sprintf("name=%s,status=ok,address=%s,slaves=1,sentinels=3", MasterName, primary.Addr)
			if info["master0"] != want {
				return fmt.Errorf("sentinel %s: %q, want %q", sn.Addr, info["master0"], want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("redistest: waiting for the sentinels: %v", err)
	}
	return s
}

// Addrs returns the sentinels' addresses, for a client's SentinelAddrs.
func (s *Sentinels) Addrs() []string {
	var a []string
	for _, sn := range s.Sentinels {
		a = append(a, sn.Addr)
	}
	return a
}

// Primary returns the address the sentinels give for the primary.
func (s *Sentinels) Primary() (string, error) {
	v, err := Do(s.Sentinels[0].Addr, "SENTINEL", "get-master-addr-by-name", MasterName)
	if err != nil {
		return "", err
	}
	a, ok := v.([]any)
	if !ok || len(a) != 2 {
		return "", fmt.Errorf("redistest: SENTINEL get-master-addr-by-name: %v", v)
	}
	return fmt.Sprintf("%v:%v", a[0], a[1]), nil
}

// WaitSwitch waits until the sentinels name a primary other than old, and
// returns its address.
func (s *Sentinels) WaitSwitch(old string, timeout time.Duration) string {
	s.t.Helper()
	var addr string
	err := poll(timeout, func() error {
		a, err := s.Primary()
		if err != nil {
			return err
		}
		if a == old {
			return fmt.Errorf("still %s", a)
		}
		addr = a
		return nil
	})
	if err != nil {
		s.t.Fatalf("redistest: waiting for a new primary: %v", err)
	}
	return addr
}
