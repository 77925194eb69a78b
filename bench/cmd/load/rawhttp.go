package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"time"
)

// rawConn is one keep-alive HTTP/1.1 connection to the server under test
// that speaks just what the load needs: it writes a GET with the API key
// header and reads the status line, the headers and a Content-Length body.
//
// The load generator shares the two cores with the server and Redis, so it
// must cost as little as possible: net/http's client spends several times
// the CPU per request (a goroutine hand-off per read and write, header maps,
// a pooled transport), and that CPU, taken from the server, showed up as
// latency the middleware did not add. This client allocates nothing per
// request and runs on its caller's goroutine.
type rawConn struct {
	addr string
	c    net.Conn
	r    *bufio.Reader
	req  []byte
}

func newRawConn(addr string) *rawConn { return &rawConn{addr: addr} }

func (rc *rawConn) close() {
	if rc.c != nil {
		_ = rc.c.Close()
		rc.c = nil
	}
}

// get sends GET / with key as X-API-Key and returns the response status.
// After an error the connection is closed; the next call dials again.
func (rc *rawConn) get(key string) (int, error) {
	if rc.c == nil {
		c, err := net.DialTimeout("tcp", rc.addr, 2*time.Second)
		if err != nil {
			return 0, err
		}
		rc.c = c
		if rc.r == nil {
			rc.r = bufio.NewReaderSize(c, 4096)
		} else {
			rc.r.Reset(c)
		}
	}
	_ = rc.c.SetDeadline(time.Now().Add(5 * time.Second))
	rc.req = append(rc.req[:0], "GET / HTTP/1.1\r\nHost: "...)
	rc.req = append(rc.req, rc.addr...)
	rc.req = append(rc.req, "\r\nX-API-Key: "...)
	rc.req = append(rc.req, key...)
	rc.req = append(rc.req, "\r\n\r\n"...)
	if _, err := rc.c.Write(rc.req); err != nil {
		rc.close()
		return 0, err
	}
	status, keep, err := rc.readResponse()
	if err != nil || !keep {
		rc.close()
	}
	return status, err
}

var errChunked = errors.New("response without Content-Length (chunked): not supported by the load client")

// readResponse reads one response and reports its status and whether the
// connection may be reused.
func (rc *rawConn) readResponse() (status int, keep bool, err error) {
	line, err := rc.line()
	if err != nil {
		return 0, false, err
	}
	// "HTTP/1.1 200 OK"
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
		return 0, false, fmt.Errorf("bad status line %q", line)
	}
	if status = atoi(line[9:12]); status < 100 {
		return 0, false, fmt.Errorf("bad status line %q", line)
	}
	length, keep := -1, true
	for {
		h, err := rc.line()
		if err != nil {
			return status, false, err
		}
		if len(h) == 0 {
			break
		}
		name, value, ok := bytes.Cut(h, []byte(":"))
		if !ok {
			return status, false, fmt.Errorf("bad header line %q", h)
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if length = atoi(value); length < 0 {
				return status, false, fmt.Errorf("bad Content-Length %q", value)
			}
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			return status, false, errChunked
		case bytes.EqualFold(name, []byte("Connection")) && bytes.EqualFold(value, []byte("close")):
			keep = false
		}
	}
	if length < 0 {
		return status, false, errChunked
	}
	if _, err := rc.r.Discard(length); err != nil {
		return status, false, err
	}
	return status, keep, nil
}

// atoi parses a non-negative decimal number of at most 9 digits, or
// returns -1.
func atoi(b []byte) int {
	if len(b) == 0 || len(b) > 9 {
		return -1
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return -1
		}
		n = 10*n + int(c-'0')
	}
	return n
}

// line returns the next line without its CRLF; it is valid until the next
// read.
func (rc *rawConn) line() ([]byte, error) {
	l, err := rc.r.ReadSlice('\n')
	if err != nil {
		return nil, err
	}
	return bytes.TrimRight(l, "\r\n"), nil
}
