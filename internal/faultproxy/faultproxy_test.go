package faultproxy_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/faultproxy"
)

// echo starts a line echo server for t and returns its address.
func echo(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	return ln.Addr().String()
}

// roundTrip sends a line through c and reads it back within timeout.
func roundTrip(c net.Conn, timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	_ = c.SetDeadline(start.Add(timeout))
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return 0, err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err == nil && line != "ping\n" {
		err = errors.New("echoed " + line)
	}
	return time.Since(start), err
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestLatency(t *testing.T) {
	for _, tc := range []struct {
		name     string
		up, down time.Duration
	}{
		{"none", 0, 0},
		{"upstream", 60 * time.Millisecond, 0},
		{"downstream", 0, 60 * time.Millisecond},
		{"both", 30 * time.Millisecond, 40 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := faultproxy.Start(t, echo(t))
			p.SetLatency(faultproxy.Upstream, tc.up)
			p.SetLatency(faultproxy.Downstream, tc.down)
			c := dial(t, p.Addr)
			d, err := roundTrip(c, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if d < tc.up+tc.down {
				t.Errorf("round trip %v, want at least %v", d, tc.up+tc.down)
			}
			p.Heal()
			if _, err := roundTrip(c, 5*time.Second); err != nil {
				t.Fatalf("after Heal: %v", err)
			}
		})
	}
}

func TestBlackHole(t *testing.T) {
	for _, dir := range []faultproxy.Direction{faultproxy.Upstream, faultproxy.Downstream} {
		p := faultproxy.Start(t, echo(t))
		c := dial(t, p.Addr)
		p.BlackHole(dir, true)
		var nerr net.Error
		if _, err := roundTrip(c, 100*time.Millisecond); !errors.As(err, &nerr) || !nerr.Timeout() {
			t.Errorf("direction %d: black hole answered: %v", dir, err)
		}
	}
}

func TestResetAfter(t *testing.T) {
	p := faultproxy.Start(t, echo(t))
	c := dial(t, p.Addr)
	p.ResetAfter(faultproxy.Downstream, 10*time.Millisecond)
	_, err := roundTrip(c, 5*time.Second)
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("got %v, want a connection reset", err)
	}
}

func TestStopStartCount(t *testing.T) {
	p := faultproxy.Start(t, echo(t))
	c := dial(t, p.Addr)
	if _, err := roundTrip(c, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	p.Stop()
	if _, err := roundTrip(c, 5*time.Second); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("a connection survived Stop: %v", err)
	}
	if c, err := net.DialTimeout("tcp", p.Addr, time.Second); err == nil {
		c.Close()
		t.Fatal("a stopped proxy accepted a connection")
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := roundTrip(dial(t, p.Addr), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if got := p.Opened(); got != 2 {
		t.Errorf("Opened() = %d, want 2", got)
	}
	c = dial(t, p.Addr)
	if _, err := roundTrip(c, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	p.Cut()
	if _, err := roundTrip(c, 5*time.Second); err == nil {
		t.Error("a connection survived Cut")
	}
}
