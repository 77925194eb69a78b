//go:build unix

package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// gatewayProcess is the gateway binary running on a free loopback port.
type gatewayProcess struct {
	cmd  *exec.Cmd
	addr string
	mu   sync.Mutex
	log  strings.Builder // stderr so far
	seen chan string     // stderr lines
	done chan struct{}   // stderr closed
}

// startGateway builds the gateway and starts it with the in-memory store.
func startGateway(t *testing.T, args ...string) *gatewayProcess {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command, to build the gateway: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "gateway")
	if out, err := exec.Command(goBin, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	p := &gatewayProcess{
		cmd:  exec.Command(bin, append([]string{"-addr", "127.0.0.1:0"}, args...)...),
		seen: make(chan string, 100),
		done: make(chan struct{}),
	}
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
			_ = p.cmd.Wait()
		}
	})
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.mu.Lock()
			p.log.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			select {
			case p.seen <- sc.Text():
			default:
			}
		}
	}()
	line := p.waitFor(t, "gateway listening")
	m := regexp.MustCompile(`addr=(\S+)`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("no address in %q", line)
	}
	p.addr = m[1]
	return p
}

// waitFor returns the first stderr line from now on that contains s. It
// gives up after 30 s (a hang, not a slow machine).
func (p *gatewayProcess) waitFor(t *testing.T, s string) string {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case line := <-p.seen:
			if strings.Contains(line, s) {
				return line
			}
		case <-deadline:
			t.Fatalf("the gateway did not log %q; its log:\n%s", s, p.stderr())
		}
	}
}

func (p *gatewayProcess) stderr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

// TestGatewayProcess runs the built gateway: SIGTERM with a request in
// flight lets it finish, then exits 0 with the store closed; headers over
// the bound get 431.
func TestGatewayProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the gateway binary; skipped with -short")
	}
	p := startGateway(t)

	t.Run("2 MB header gets 431", func(t *testing.T) {
		resp := rawRequest(t, p.addr, "GET /items HTTP/1.1\r\nHost: gateway\r\nX-Big: "+strings.Repeat("a", 2<<20)+"\r\n\r\n")
		if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Fatalf("status %d, want 431", resp.StatusCode)
		}
	})

	t.Run("SIGTERM finishes the request in flight and exits 0", func(t *testing.T) {
		// A slow request: /slow sends its status at once and its body
		// after the delay, so the status line tells that the handler runs.
		conn, err := net.Dial("tcp", p.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := io.WriteString(conn, "GET /slow?ms=1000 HTTP/1.1\r\nHost: gateway\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /slow: status %d", resp.StatusCode)
		}
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		p.waitFor(t, "gateway shutting down")
		waitRefused(t, p.addr)
		body, err := io.ReadAll(resp.Body)
		if err != nil || !strings.Contains(string(body), `"slow":"1s"`) {
			t.Fatalf("the request in flight was cut: %q, %v\n%s", body, err, p.stderr())
		}
		// Its stderr is read to the end (the process exited) before Wait,
		// which closes the pipe and would cut the last lines short.
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			t.Fatalf("the gateway did not exit after SIGTERM\n%s", p.stderr())
		}
		if err := p.cmd.Wait(); err != nil {
			t.Fatalf("gateway exited with %v, want 0\n%s", err, p.stderr())
		}
		if log := p.stderr(); !strings.Contains(log, "store closed") {
			t.Errorf("the gateway did not close its store; its log:\n%s", log)
		}
	})
}

// rawRequest writes req on a new connection while reading the response,
// so that a server that answers before reading everything is still heard.
func rawRequest(t *testing.T, addr, req string) *http.Response {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	go func() { _, _ = io.WriteString(conn, req) }() // fails once the server has answered and closed
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no response: %v", err)
	}
	return resp
}

// waitRefused waits until addr refuses connections: the listener is closed.
func waitRefused(t *testing.T, addr string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatal("the listener still accepts connections after SIGTERM")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
