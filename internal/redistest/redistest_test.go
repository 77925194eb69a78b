package redistest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// command sends one inline command over a raw connection and returns what
// arrives within a short while.
func command(t *testing.T, addr, line string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte(line + "\r\n")); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := c.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			return b.String()
		}
		// A reply has begun: what remains of it follows at once.
		_ = c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	}
}

func closed(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return true
	}
	c.Close()
	return false
}

func TestLaunchStop(t *testing.T) {
	t.Parallel()
	Binary(t)
	s, err := Launch(Options{Log: true, Args: []string{"--maxmemory", "10mb"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if s.Addr == "127.0.0.1:6379" || s.Port == 6379 {
		t.Fatal("must never use the default port")
	}
	if err := Ping(s.Addr); err != nil {
		t.Fatal(err)
	}
	if s.Pid() <= 0 {
		t.Errorf("pid %d", s.Pid())
	}
	for _, want := range []string{"save\r\n$0\r\n", "appendonly\r\n$2\r\nno\r\n", "maxmemory\r\n$8\r\n10485760\r\n",
		"bind\r\n$9\r\n127.0.0.1\r\n", "protected-mode\r\n$3\r\nyes\r\n"} {
		name, _, _ := strings.Cut(want, "\r\n")
		if got := command(t, s.Addr, "CONFIG GET "+name); !strings.Contains(got, want) {
			t.Errorf("CONFIG GET %s: %q", name, got)
		}
	}
	if _, err := os.Stat(filepath.Join(s.dir, "redis.log")); err != nil {
		t.Errorf("log: %v", err)
	}
	s.Stop()
	if !closed(s.Addr) {
		t.Fatal("server still listening after Stop")
	}
	if _, err := os.Stat(s.dir); !os.IsNotExist(err) {
		t.Errorf("directory left behind: %v", err)
	}
	if s.Pid() != 0 {
		t.Errorf("pid %d after Stop", s.Pid())
	}
	s.Stop() // idempotent
}

func TestStartKillRestart(t *testing.T) {
	t.Parallel()
	s := Start(t)
	if s.Port == 6379 {
		t.Fatal("must never use the default port")
	}
	if got := command(t, s.Addr, "SET k v"); got != "+OK\r\n" {
		t.Fatalf("SET: %q", got)
	}
	pid := s.Pid()
	s.Kill()
	if !closed(s.Addr) {
		t.Fatal("server still listening after Kill")
	}
	s.Kill() // idempotent
	s.Restart()
	if s.Pid() == pid || s.Pid() == 0 {
		t.Errorf("pid %d after restart, was %d", s.Pid(), pid)
	}
	if got := command(t, s.Addr, "GET k"); got != "$-1\r\n" {
		t.Errorf("data survived the restart: %q", got)
	}
}

func TestRestartNeedsStart(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Restart of a launched server did not panic")
		}
	}()
	(&Server{}).Restart()
}

// recorder is a testing.TB whose Fatal and Skip are recorded, and end only
// the goroutine that calls them.
type recorder struct {
	testing.TB
	fatal, skip string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (r *recorder) Skipf(format string, args ...any) {
	r.skip = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func startRecorded(t *testing.T) *recorder {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Start(r)
		t.Error("Start returned without redis-server")
	}()
	<-done
	return r
}

func TestNoBinary(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	if _, err := Launch(Options{}); !errors.Is(err, ErrNoBinary) {
		t.Errorf("Launch: %v", err)
	}

	t.Setenv("REQUIRE_REDIS", "")
	if r := startRecorded(t); r.skip == "" || r.fatal != "" {
		t.Errorf("without REQUIRE_REDIS: skip %q, fatal %q", r.skip, r.fatal)
	}
	t.Setenv("REQUIRE_REDIS", "1")
	if r := startRecorded(t); r.fatal == "" || r.skip != "" {
		t.Errorf("with REQUIRE_REDIS=1: skip %q, fatal %q", r.skip, r.fatal)
	}
}

// TestServerVersion checks, when REQUIRE_REDIS_VERSION is set (CI's Redis 6
// run sets it to "6.0."), that the redis-server on PATH is that version:
// a run meant for one Redis cannot pass on another.
func TestServerVersion(t *testing.T) {
	t.Parallel()
	want := os.Getenv("REQUIRE_REDIS_VERSION")
	if want == "" {
		t.Skip("REQUIRE_REDIS_VERSION is not set: any redis-server will do")
	}
	s := Start(t)
	info := command(t, s.Addr, "INFO server")
	_, rest, ok := strings.Cut(info, "redis_version:")
	if !ok {
		t.Fatalf("INFO server without redis_version: %q", info)
	}
	version, _, _ := strings.Cut(rest, "\r\n")
	if !strings.HasPrefix(version, want) {
		t.Fatalf("redis-server on PATH is %s, want %s…", version, want)
	}
	t.Logf("redis-server %s", version)
}
