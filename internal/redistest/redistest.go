// Package redistest starts real redis-server processes for tests, on free
// loopback ports, and stops them when the test ends. It never touches a
// Redis it did not start.
//
// When redis-server is not installed, tests that need it are skipped, unless
// the environment sets REQUIRE_REDIS=1 (as CI does): then they fail, so a
// missing server can never pass silently.
package redistest

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// Server is one redis-server process started by a test.
type Server struct {
	t    testing.TB
	Addr string // 127.0.0.1:port
	Port int
	dir  string
	args []string
	cmd  *exec.Cmd
}

// Binary returns the path of redis-server, or skips t (fails it under
// REQUIRE_REDIS=1) when there is none.
func Binary(t testing.TB) string {
	t.Helper()
	path, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("REQUIRE_REDIS") == "1" {
			t.Fatalf("redistest: REQUIRE_REDIS=1 but redis-server is not installed: %v", err)
		}
		t.Skipf("redistest: redis-server not installed (set REQUIRE_REDIS=1 to fail instead): %v", err)
	}
	return path
}

// Start starts a redis-server on a free loopback port with persistence off,
// waits until it answers PING, and stops it when t ends. extra arguments are
// appended to the command line.
func Start(t testing.TB, extra ...string) *Server {
	t.Helper()
	bin := Binary(t)
	var lastErr error
	for range 5 {
		port, err := FreePort()
		if err != nil {
			t.Fatalf("redistest: %v", err)
		}
		s := &Server{t: t, Port: port, Addr: "127.0.0.1:" + strconv.Itoa(port), dir: t.TempDir()}
		s.args = append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no", "--dir", s.dir, "--daemonize", "no"}, extra...)
		if lastErr = s.start(bin); lastErr == nil {
			t.Cleanup(s.Kill)
			return s
		}
	}
	t.Fatalf("redistest: could not start redis-server: %v", lastErr)
	return nil
}

func (s *Server) start(bin string) error {
	s.cmd = exec.Command(bin, s.args...)
	s.cmd.Dir = s.dir
	if err := s.cmd.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func(c *exec.Cmd) { exited <- c.Wait() }(s.cmd)
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			return fmt.Errorf("redis-server on port %d exited: %v", s.Port, err)
		default:
		}
		if ping(s.Addr) == nil {
			go func() { <-exited }()
			return nil
		}
		time.Sleep(5 * time.Millisecond)
	}
	_ = s.cmd.Process.Kill()
	return fmt.Errorf("redis-server on port %d did not answer PING", s.Port)
}

// ping sends PING over a raw connection: this package imports no Redis
// client, so go-redis stays the Redis store's dependency alone.
func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(200 * time.Millisecond))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	buf := make([]byte, 7)
	if _, err := io.ReadFull(c, buf); err != nil {
		return err
	}
	if string(buf) != "+PONG\r\n" {
		return fmt.Errorf("unexpected reply %q", buf)
	}
	return nil
}

// Kill stops the server with SIGKILL (as a crash would) and waits until its
// port is closed. Killing a stopped server does nothing.
func (s *Server) Kill() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	s.cmd = nil
	for range 200 {
		if c, err := net.DialTimeout("tcp", s.Addr, 50*time.Millisecond); err != nil {
			return
		} else {
			c.Close()
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Restart starts the server again on the same port, empty (scripts and data
// gone), as after a crash.
func (s *Server) Restart() {
	s.t.Helper()
	s.Kill()
	if err := s.start(Binary(s.t)); err != nil {
		s.t.Fatalf("redistest: restart: %v", err)
	}
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
