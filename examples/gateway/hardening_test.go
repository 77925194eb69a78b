package main

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sluicehq/sluice"
)

// TestRedisNeedsASecret: without a secret the gateway refuses Redis, before
// connecting to it, rather than hash identities with a public key.
func TestRedisNeedsASecret(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	_, _, err := openStore(redisTarget{spec: "127.0.0.1:1"}, "", 0, log, nil)
	if !errors.Is(err, errNoSecret) {
		t.Fatalf("openStore without a secret: %v, want errNoSecret", err)
	}
	if !strings.Contains(err.Error(), "SLUICE_SECRET") {
		t.Errorf("the error does not say how to set the secret: %v", err)
	}
}

// brokenStore fails every call with err.
type brokenStore struct{ err error }

func (s brokenStore) Take(context.Context, []sluice.Hit, []sluice.Result) error { return s.err }
func (s brokenStore) Close() error                                              { return nil }

// TestStoreFailuresAreLoggedWithTheirCause: the gateway logs why the store
// failed, and not once per request.
func TestStoreFailuresAreLoggedWithTheirCause(t *testing.T) {
	cause := errors.New("dial tcp 10.0.0.9:6379: connect: connection refused")
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	router, err := newRouter(brokenStore{&sluice.StoreError{Op: "redisstore: take", Kind: sluice.ErrUnavailable, Err: cause}}, log)
	if err != nil {
		t.Fatal(err)
	}
	const requests = 50
	for range requests {
		router.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/items", nil))
	}
	var failures []string
	for _, line := range strings.Split(buf.String(), "\n") {
		if strings.Contains(line, "store failed") {
			failures = append(failures, line)
		}
	}
	if len(failures) == 0 || len(failures) >= requests/2 {
		t.Fatalf("%d store-failure records for %d failed requests, want a few; log:\n%s", len(failures), requests, buf.String())
	}
	if !strings.Contains(failures[0], "connection refused") {
		t.Errorf("the record does not carry the cause: %s", failures[0])
	}
}
