// Package redisproc starts a private redis-server for the benchmarks: on a
// free 127.0.0.1 port, persistence off, binary from PATH. It never touches a
// Redis it did not start (in particular not one on 6379), and stops the
// process it started by its pid.
package redisproc

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// ErrNoBinary reports that redis-server is not on PATH.
var ErrNoBinary = errors.New("redisproc: redis-server not found on PATH")

// Server is one redis-server process this package started.
type Server struct {
	Addr string // 127.0.0.1:port
	Port int

	dir string
	cmd *exec.Cmd
	out *os.File
}

// Start starts redis-server on a free loopback port and waits until it
// answers PING. extra arguments are appended to its command line.
func Start(extra ...string) (*Server, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, ErrNoBinary
	}
	var lastErr error
	for range 5 {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		dir, err := os.MkdirTemp("", "sluice-bench-redis-")
		if err != nil {
			return nil, err
		}
		s := &Server{Addr: "127.0.0.1:" + strconv.Itoa(port), Port: port, dir: dir}
		args := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no", "--dir", dir, "--daemonize", "no",
			"--protected-mode", "yes"}, extra...)
		if lastErr = s.start(bin, args); lastErr == nil {
			return s, nil
		}
		os.RemoveAll(dir)
	}
	return nil, fmt.Errorf("redisproc: could not start redis-server: %w", lastErr)
}

func (s *Server) start(bin string, args []string) error {
	log, err := os.Create(s.dir + "/redis.log")
	if err != nil {
		return err
	}
	s.out = log
	s.cmd = exec.Command(bin, args...)
	s.cmd.Dir = s.dir
	s.cmd.Stdout, s.cmd.Stderr = log, log
	if err := s.cmd.Start(); err != nil {
		log.Close()
		return err
	}
	exited := make(chan error, 1)
	go func(c *exec.Cmd) { exited <- c.Wait() }(s.cmd)
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			log.Close()
			return fmt.Errorf("redis-server on port %d exited: %v", s.Port, err)
		default:
		}
		if Ping(s.Addr) == nil {
			return nil
		}
		time.Sleep(5 * time.Millisecond)
	}
	_ = s.cmd.Process.Kill()
	log.Close()
	return fmt.Errorf("redis-server on port %d did not answer PING", s.Port)
}

// Pid returns the server's process id.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// Stop kills the server (by its pid) and removes its directory. Stopping
// twice does nothing.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	for range 200 {
		c, err := net.DialTimeout("tcp", s.Addr, 50*time.Millisecond)
		if err != nil {
			break
		}
		c.Close()
		time.Sleep(5 * time.Millisecond)
	}
	s.cmd = nil
	s.out.Close()
	os.RemoveAll(s.dir)
}

// ForTest starts a server for a test or benchmark and stops it when t ends.
// Without redis-server it skips t, unless REQUIRE_REDIS=1, when it fails.
func ForTest(t testing.TB, extra ...string) *Server {
	t.Helper()
	s, err := Start(extra...)
	if errors.Is(err, ErrNoBinary) {
		if os.Getenv("REQUIRE_REDIS") == "1" {
			t.Fatalf("REQUIRE_REDIS=1 but %v", err)
		}
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// Ping sends PING over a raw connection and checks for PONG.
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

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// ParseInfo parses the text of an INFO reply into field → value.
func ParseInfo(text string) map[string]string {
	m := make(map[string]string)
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok {
			m[k] = v
		}
	}
	return m
}

// CommandCalls returns, from a parsed INFO commandstats, the calls per
// command ("evalsha" → 1234). Commands run inside scripts and transactions
// are counted too: that is Redis's own accounting.
func CommandCalls(info map[string]string) map[string]uint64 {
	out := make(map[string]uint64)
	for k, v := range info {
		name, ok := strings.CutPrefix(k, "cmdstat_")
		if !ok {
			continue
		}
		for _, f := range strings.Split(v, ",") {
			if n, ok := strings.CutPrefix(f, "calls="); ok {
				c, _ := strconv.ParseUint(n, 10, 64)
				out[name] = c
			}
		}
	}
	return out
}

// CPUSeconds returns used_cpu_sys + used_cpu_user from a parsed INFO cpu.
func CPUSeconds(info map[string]string) float64 {
	sys, _ := strconv.ParseFloat(info["used_cpu_sys"], 64)
	user, _ := strconv.ParseFloat(info["used_cpu_user"], 64)
	return sys + user
}
