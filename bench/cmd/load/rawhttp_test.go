package main

import (
	"bufio"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestRawConnAgainstNetHTTP(t *testing.T) {
	var keys []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		keys = append(keys, r.Header.Get("X-API-Key"))
		if r.Header.Get("X-API-Key") == "deny" {
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write([]byte(`{"status":429}`))
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	}))
	defer srv.Close()
	rc := newRawConn(strings.TrimPrefix(srv.URL, "http://"))
	defer rc.close()
	for i, tc := range []struct {
		key    string
		status int
	}{{"a", 200}, {"deny", 429}, {"b", 200}} {
		status, err := rc.get(tc.key)
		if err != nil || status != tc.status {
			t.Fatalf("request %d: status %d, err %v; want %d", i, status, err, tc.status)
		}
	}
	if got := strings.Join(keys, ","); got != "a,deny,b" {
		t.Fatalf("server saw keys %q", got)
	}
}

func TestRawConnResponses(t *testing.T) {
	for _, tc := range []struct {
		name, resp string
		status     int
		keep       bool
		err        error // nil: none; errAny: some error
	}{
		{"plain", "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n", 200, true, nil},
		{"close", "HTTP/1.1 503 Service Unavailable\r\nconnection: close\r\ncontent-length: 0\r\n\r\n", 503, false, nil},
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nok\n\r\n0\r\n\r\n", 200, false, errChunked},
		{"no length", "HTTP/1.1 200 OK\r\n\r\n", 200, false, errChunked},
		{"bad status", "HTTP/1.1 2x0 OK\r\n\r\n", 0, false, errAny},
		{"bad length", "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", 200, false, errAny},
		{"short body", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nok", 200, false, errAny},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc := &rawConn{r: bufio.NewReader(strings.NewReader(tc.resp))}
			status, keep, err := rc.readResponse()
			switch {
			case tc.err == nil && err != nil, tc.err == errAny && err == nil,
				tc.err != nil && tc.err != errAny && !errors.Is(err, tc.err):
				t.Fatalf("err %v, want %v", err, tc.err)
			case status != tc.status || (err == nil && keep != tc.keep):
				t.Fatalf("status %d keep %v, want %d %v", status, keep, tc.status, tc.keep)
			}
		})
	}
}

var errAny = errors.New("any error")
