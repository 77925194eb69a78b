// Package etcdtest starts etcd servers of a test's own, on free loopback
// ports with data directories of their own, and stops them by their pid.
// Without etcd on PATH a test is skipped, unless the environment sets
// REQUIRE_ETCD=1 (as CI does): then it fails.
package etcdtest

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Server is an etcd the test started on loopback ports of its own,
// with a data directory of its own; it is stopped by its pid.
type Server struct {
	tb                   testing.TB
	bin, dir             string
	clientPort, peerPort int
	// Addr is the client address, 127.0.0.1:port.
	Addr   string
	cmd    *exec.Cmd
	exited chan struct{}
}

// Start starts an etcd of the test's own and stops it when the test
// ends. Without etcd on PATH the test is skipped, unless REQUIRE_ETCD=1,
// when it fails.
func Start(tb testing.TB) *Server {
	tb.Helper()
	bin, err := exec.LookPath("etcd")
	if err != nil {
		if os.Getenv("REQUIRE_ETCD") == "1" {
			tb.Fatalf("REQUIRE_ETCD=1 but etcd is not installed (Debian: apt-get install etcd-server): %v", err)
		}
		tb.Skip("etcd is not installed (Debian: etcd-server; set REQUIRE_ETCD=1 to make this a failure)")
	}
	s := &Server{tb: tb, bin: bin, dir: tb.TempDir()}
	for range 5 {
		s.clientPort, s.peerPort = freePort(tb), freePort(tb)
		if s.clientPort == s.peerPort {
			continue
		}
		s.Addr = "127.0.0.1:" + strconv.Itoa(s.clientPort)
		if err := s.start(); err == nil {
			tb.Cleanup(s.Kill)
			return s
		} else {
			tb.Logf("etcd did not start: %v", err)
		}
		os.RemoveAll(filepath.Join(s.dir, "data"))
	}
	tb.Fatal("could not start etcd on free ports")
	return nil
}

// start runs etcd on the server's ports and data directory, and waits
// until it answers.
func (s *Server) start() error {
	peer := "http://127.0.0.1:" + strconv.Itoa(s.peerPort)
	client := "http://" + s.Addr
	log, err := os.OpenFile(filepath.Join(s.dir, "etcd.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(s.bin, "--name", "sluice-test", "--data-dir", filepath.Join(s.dir, "data"),
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "sluice-test="+peer, "--initial-cluster-state", "new")
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		return err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); log.Close(); close(exited) }()
	s.cmd, s.exited = cmd, exited
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return errExited(s.dir)
		default:
		}
		if healthy(s.Addr) {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.Kill()
	return errExited(s.dir)
}

type startError string

func (e startError) Error() string { return string(e) }

func errExited(dir string) error {
	b, _ := os.ReadFile(filepath.Join(dir, "etcd.log"))
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return startError("etcd exited or did not answer; its log ends:\n" + string(b))
}

// healthy reports whether etcd answers /health with a leader.
func healthy(addr string) bool {
	c := http.Client{Timeout: 500 * time.Millisecond}
	resp, err := c.Get("http://" + addr + "/health")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode == 200 && strings.Contains(string(b), `"true"`)
}

// Kill stops the server by its pid and waits for it to exit.
func (s *Server) Kill() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
	s.cmd = nil
}

// Restart starts the server again on the same ports and data.
func (s *Server) Restart() {
	s.tb.Helper()
	var err error
	for range 3 {
		if err = s.start(); err == nil {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	s.tb.Fatalf("etcd did not restart: %v", err)
}

// Client returns an etcd client of the server, closed when the test ends.
func (s *Server) Client() *clientv3.Client {
	s.tb.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{s.Addr}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		s.tb.Fatal(err)
	}
	s.tb.Cleanup(func() { cli.Close() })
	return cli
}

// Put writes data to key, as an operator's tool would, without checking it.
func (s *Server) Put(key, data string) int64 {
	s.tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := s.Client().Put(ctx, key, data)
	if err != nil {
		s.tb.Fatal(err)
	}
	return resp.Header.Revision
}

func freePort(tb testing.TB) int {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
