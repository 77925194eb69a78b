// Package faultproxy is a TCP proxy for fault tests: it forwards a
// loopback port to an upstream address and can add latency per direction,
// swallow data (a black hole), reset connections, refuse new ones, and
// count the connections it accepted. It uses the standard library only.
package faultproxy

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Direction is one way through the proxy.
type Direction int

const (
	// Upstream is client to server: requests.
	Upstream Direction = iota
	// Downstream is server to client: replies.
	Downstream
)

// fault is what happens to the data of one direction.
type fault struct {
	latency atomic.Int64 // nanoseconds added to every chunk
	drop    atomic.Bool  // chunks are swallowed
	reset   atomic.Int64 // when > 0: a chunk resets its connection this many ns after it was read, unforwarded
}

// Proxy forwards connections from Addr to an upstream address. Its methods
// are safe for concurrent use.
type Proxy struct {
	// Addr is the address the proxy listens on (127.0.0.1:port). It stays
	// the same across Stop and Start.
	Addr     string
	upstream string
	faults   [2]fault
	opened   atomic.Int64

	mu    sync.Mutex
	ln    net.Listener
	links map[*link]struct{}
	wg    sync.WaitGroup
}

// New starts a proxy to upstream on a free loopback port.
func New(upstream string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{Addr: ln.Addr().String(), upstream: upstream, links: map[*link]struct{}{}}
	p.serve(ln)
	return p, nil
}

// Start starts a proxy to upstream for t and stops it when t ends.
func Start(t testing.TB, upstream string) *Proxy {
	t.Helper()
	p, err := New(upstream)
	if err != nil {
		t.Fatalf("faultproxy: %v", err)
	}
	t.Cleanup(p.Close)
	return p
}

// SetLatency delays every chunk of data going in dir by d (0: none). A
// chunk keeps the latency it was read with; chunks stay in order.
func (p *Proxy) SetLatency(dir Direction, d time.Duration) {
	p.faults[dir].latency.Store(int64(d))
}

// BlackHole makes the proxy swallow the data going in dir (on) or forward
// it again (off). Connections stay open.
func (p *Proxy) BlackHole(dir Direction, on bool) {
	p.faults[dir].drop.Store(on)
}

// ResetAfter makes data going in dir reset its connection (a TCP RST to
// both ends) after d, without forwarding it. d ≤ 0 turns this off.
func (p *Proxy) ResetAfter(dir Direction, d time.Duration) {
	p.faults[dir].reset.Store(int64(max(d, 0)))
}

// Heal removes every fault: no latency, no black hole, no reset.
func (p *Proxy) Heal() {
	for dir := range p.faults {
		p.SetLatency(Direction(dir), 0)
		p.BlackHole(Direction(dir), false)
		p.ResetAfter(Direction(dir), 0)
	}
}

// Opened returns how many connections the proxy has accepted.
func (p *Proxy) Opened() int64 { return p.opened.Load() }

// Cut closes every open connection; new ones are still accepted.
func (p *Proxy) Cut() {
	p.mu.Lock()
	links := make([]*link, 0, len(p.links))
	for l := range p.links {
		links = append(links, l)
	}
	p.mu.Unlock()
	for _, l := range links {
		l.close(false)
	}
}

// Stop closes the listener, so that new connections are refused, and cuts
// every open connection.
func (p *Proxy) Stop() {
	p.mu.Lock()
	ln := p.ln
	p.ln = nil
	p.mu.Unlock()
	if ln != nil {
		ln.Close()
	}
	p.Cut()
}

// Start listens again on Addr after Stop.
func (p *Proxy) Start() error {
	p.mu.Lock()
	running := p.ln != nil
	p.mu.Unlock()
	if running {
		return nil
	}
	ln, err := net.Listen("tcp", p.Addr)
	if err != nil {
		return err
	}
	p.serve(ln)
	return nil
}

// Close stops the proxy and waits for its goroutines.
func (p *Proxy) Close() {
	p.Stop()
	p.wg.Wait()
}

func (p *Proxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.opened.Add(1)
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				p.handle(c)
			}()
		}
	}()
}

// link is one proxied connection.
type link struct {
	client, server net.Conn
	once           sync.Once
}

// close closes both ends, with a reset when rst is set.
func (l *link) close(rst bool) {
	l.once.Do(func() {
		for _, c := range []net.Conn{l.client, l.server} {
			if tc, ok := c.(*net.TCPConn); ok && rst {
				_ = tc.SetLinger(0)
			}
			c.Close()
		}
	})
}

func (p *Proxy) handle(client net.Conn) {
	server, err := net.DialTimeout("tcp", p.upstream, time.Second)
	if err != nil {
		client.Close()
		return
	}
	l := &link{client: client, server: server}
	p.mu.Lock()
	if p.ln == nil { // stopped meanwhile
		p.mu.Unlock()
		l.close(false)
		return
	}
	p.links[l] = struct{}{}
	p.mu.Unlock()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); p.pipe(l, client, server, &p.faults[Upstream]) }()
	go func() { defer wg.Done(); p.pipe(l, server, client, &p.faults[Downstream]) }()
	wg.Wait()
	p.mu.Lock()
	delete(p.links, l)
	p.mu.Unlock()
}

// chunk is data read from one end, due at the other end at due.
type chunk struct {
	data []byte
	due  time.Time
}

// pipe copies from src to dst through f until either end closes, then
// closes the link.
func (p *Proxy) pipe(l *link, src, dst net.Conn, f *fault) {
	defer l.close(false)
	queue := make(chan chunk, 1024)
	done := make(chan struct{})
	go func() { // writer: keeps order, waits for each chunk's time
		defer close(done)
		for c := range queue {
			if d := time.Until(c.due); d > 0 {
				time.Sleep(d)
			}
			if _, err := dst.Write(c.data); err != nil {
				l.close(false)
				for range queue { // let the reader finish
				}
				return
			}
		}
	}()
	defer func() { close(queue); <-done }()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			now := time.Now()
			switch {
			case f.reset.Load() > 0:
				d := time.Duration(f.reset.Load())
				time.AfterFunc(d, func() { l.close(true) })
			case f.drop.Load():
			default:
				data := append([]byte(nil), buf[:n]...)
				queue <- chunk{data: data, due: now.Add(time.Duration(f.latency.Load()))}
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				l.close(false)
			}
			return
		}
	}
}
