// Package redistest starts real redis-server processes on free loopback
// ports, with persistence off, and stops them. It never touches a Redis it
// did not start (in particular not one on 127.0.0.1:6379), and stops the
// process it started by its pid.
//
// Launch is the core, for any program (the benchmark module's load tool
// uses it): it reports failures as errors. Start and Binary build on it for
// tests and benchmarks: when redis-server is not installed they skip, unless
// the environment sets REQUIRE_REDIS=1 (as CI does): then they fail, so a
// missing server can never pass silently.
//
// The package imports no Redis client (it sends PING over a raw
// connection), so go-redis stays the Redis store's dependency alone.
package redistest

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// ErrNoBinary reports that redis-server is not on PATH. Launch wraps it.
var ErrNoBinary = errors.New("redistest: redis-server not found on PATH")

const (
	attempts     = 5               // free ports tried before Launch gives up
	startTimeout = 5 * time.Second // for the first PONG
	exitTimeout  = 5 * time.Second // for the process to exit after SIGKILL
)

// Options configures Launch.
type Options struct {
	// Dir is the server's working directory. Empty means a new temporary
	// directory, which Stop removes.
	Dir string
	// Args are appended to the command line, after the defaults: the port,
	// --bind 127.0.0.1, no RDB or AOF persistence, no daemonizing, protected
	// mode on, and a replica's full sync started at once (Redis 7 waits
	// 5 s by default for more replicas to share a diskless one).
	Args []string
	// Log sends the server's standard output and error to redis.log in its
	// directory (appended to across restarts). Without it they are
	// discarded.
	Log bool
	// Port is the port to listen on. 0 means a free one.
	Port int
	// ConfigFile, when set, is passed first on the command line: the
	// server reads it before the other arguments (a sentinel needs one it
	// can rewrite).
	ConfigFile string
}

// Server is one redis-server process started by this package.
type Server struct {
	Addr string // 127.0.0.1:port
	Port int

	t      testing.TB // the test that started it (Start); nil from Launch
	bin    string
	dir    string
	ownDir bool // dir was made by Launch; Stop removes it
	args   []string
	log    bool

	cmd    *exec.Cmd  // nil when not running
	exited chan error // cmd.Wait's result
	out    *os.File   // redis.log, when Log
}

// Launch starts a redis-server on a free loopback port and waits until it
// answers PING. It tries a few ports, in case another process takes the
// chosen one first. The caller must Stop the server. Without redis-server
// on PATH the error wraps ErrNoBinary.
func Launch(opts Options) (*Server, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoBinary, err)
	}
	return launch(bin, opts)
}

func launch(bin string, opts Options) (*Server, error) {
	var lastErr error
	for range attempts {
		port, err := opts.Port, error(nil)
		if port == 0 {
			if port, err = FreePort(); err != nil {
				return nil, fmt.Errorf("redistest: %w", err)
			}
		}
		s := &Server{Addr: "127.0.0.1:" + strconv.Itoa(port), Port: port, bin: bin, dir: opts.Dir, log: opts.Log}
		if s.dir == "" {
			if s.dir, err = os.MkdirTemp("", "sluice-redis-"); err != nil {
				return nil, fmt.Errorf("redistest: %w", err)
			}
			s.ownDir = true
		}
		s.args = append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no", "--dir", s.dir, "--daemonize", "no",
			"--protected-mode", "yes", "--repl-diskless-sync-delay", "0"}, opts.Args...)
		if opts.ConfigFile != "" {
			s.args = append([]string{opts.ConfigFile}, s.args...)
		}
		if lastErr = s.start(); lastErr == nil {
			return s, nil
		}
		if s.ownDir {
			os.RemoveAll(s.dir)
		}
	}
	return nil, fmt.Errorf("redistest: could not start redis-server: %w", lastErr)
}

// start runs the process on s.Port and waits for its first PONG.
func (s *Server) start() error {
	cmd := exec.Command(s.bin, s.args...)
	cmd.Dir = s.dir
	if s.log {
		f, err := os.OpenFile(filepath.Join(s.dir, "redis.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		s.out = f
		cmd.Stdout, cmd.Stderr = f, f
	}
	if err := cmd.Start(); err != nil {
		s.closeLog()
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(startTimeout)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			s.closeLog()
			return fmt.Errorf("redis-server on port %d exited: %v", s.Port, err)
		default:
		}
		if Ping(s.Addr) == nil {
			if !answeredBy(s.Addr, cmd.Process.Pid) {
				// Another test's server took the port first (ours will
				// fail to bind): try another port.
				_ = cmd.Process.Kill()
				waitExit(exited)
				s.closeLog()
				return fmt.Errorf("port %d answered by another redis-server", s.Port)
			}
			s.cmd, s.exited = cmd, exited
			return nil
		}
		time.Sleep(5 * time.Millisecond)
	}
	_ = cmd.Process.Kill()
	waitExit(exited)
	s.closeLog()
	return fmt.Errorf("redis-server on port %d did not answer PING", s.Port)
}

// answeredBy reports whether the redis-server at addr is the process pid,
// by the process_id its INFO gives; true when it cannot tell (a server
// that wants a password before INFO).
func answeredBy(addr string, pid int) bool {
	info, err := DoString(addr, "INFO", "server")
	if err != nil {
		return true
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			return v == strconv.Itoa(pid)
		}
	}
	return true
}

func waitExit(exited <-chan error) {
	select {
	case <-exited:
	case <-time.After(exitTimeout):
	}
}

func (s *Server) closeLog() {
	if s.out != nil {
		s.out.Close()
		s.out = nil
	}
}

// Pid returns the server's process id, or 0 when it is not running.
func (s *Server) Pid() int {
	if s.cmd == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Kill stops the server with SIGKILL (as a crash would), waits for the
// process to exit and its port to close, and keeps its directory, so that
// Restart can follow. Killing a stopped server does nothing.
func (s *Server) Kill() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	waitExit(s.exited)
	s.cmd, s.exited = nil, nil
	s.closeLog()
	for range 200 {
		c, err := net.DialTimeout("tcp", s.Addr, 50*time.Millisecond)
		if err != nil {
			return
		}
		c.Close()
		time.Sleep(5 * time.Millisecond)
	}
}

// Stop kills the server (see Kill) and removes its directory if Launch made
// it. Stopping twice does nothing.
func (s *Server) Stop() {
	s.Kill()
	if s.ownDir {
		os.RemoveAll(s.dir)
		s.ownDir = false
	}
}

// Restart starts the server again on the same port, empty (scripts and data
// gone), as after a crash. It is for servers from Start, and fails their
// test when the server does not come back.
func (s *Server) Restart() {
	if s.t == nil {
		panic("redistest: Restart of a server not started by Start")
	}
	s.t.Helper()
	s.Kill()
	if err := s.start(); err != nil {
		s.t.Fatalf("redistest: restart: %v", err)
	}
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
		countSkip(t)
		t.Skipf("redistest: redis-server not installed (set REQUIRE_REDIS=1 to fail instead): %v", err)
	}
	return path
}

// Start starts a redis-server for t as Launch does, in a directory of t's,
// and stops it when t ends. extra arguments are appended to the command
// line. Without redis-server it skips t, or fails it under REQUIRE_REDIS=1
// (see Binary); it fails t when the server does not start.
func Start(t testing.TB, extra ...string) *Server {
	t.Helper()
	return StartWith(t, Options{Args: extra})
}

// StartWith is Start with opts; an empty opts.Dir means a directory of t's.
func StartWith(t testing.TB, opts Options) *Server {
	t.Helper()
	bin := Binary(t)
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	s, err := launch(bin, opts)
	if err != nil {
		t.Fatal(err)
	}
	s.t = t
	t.Cleanup(s.Stop)
	return s
}

// Ping sends PING to addr over a raw connection and checks for PONG.
func Ping(addr string) error {
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

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
