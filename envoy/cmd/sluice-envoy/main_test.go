package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// syncBuffer is a bytes.Buffer safe for the logger and the test at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const good = `domain: edge
descriptors:
  - key: remote_address
    rate_limit: {unit: minute, requests_per_unit: 1, name: per-ip}
`

// TestRunRefusesBadMapping: a mapping file with a mistake stops the
// command at start, naming the file, the line and the field.
func TestRunRefusesBadMapping(t *testing.T) {
	bad := writeFile(t, "ratelimit.yaml", "domain: edge\ndescriptors:\n  - key: remote_address\n    rate_limit: {unit: minute, requests_per_unit: -1}\n")
	for _, args := range [][]string{{"-config", bad}, {"-config", bad, "-check"}} {
		err := run(context.Background(), args, io.Discard, nil)
		want := bad + `:4: domain "edge": descriptors[0].rate_limit.requests_per_unit: "-1" is out of range`
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("run(%v) = %v, want %q", args, err, want)
		}
	}
	if err := run(context.Background(), nil, io.Discard, nil); err == nil || !strings.Contains(err.Error(), "-config") {
		t.Errorf("without -config: %v", err)
	}
}

// TestRunCheck: -check accepts a valid mapping and exits.
func TestRunCheck(t *testing.T) {
	var out syncBuffer
	if err := run(context.Background(), []string{"-config", writeFile(t, "ok.yaml", good), "-check"}, &out, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "mapping files are valid") {
		t.Errorf("output: %s", out.String())
	}
}

// TestRunNeedsSecretForRedis: the Redis store is never opened with the
// public default key.
func TestRunNeedsSecretForRedis(t *testing.T) {
	t.Setenv("SLUICE_SECRET", "")
	err := run(context.Background(), []string{"-config", writeFile(t, "ok.yaml", good), "-redis", "127.0.0.1:1", "-secret", ""}, io.Discard, nil)
	if err == nil || !strings.Contains(err.Error(), "needs a secret") {
		t.Errorf("got %v", err)
	}
}

// TestRunServes: the command serves the rate limit service and gRPC health
// on -grpc, and /healthz, /readyz and /metrics on -http, and stops when
// its context ends.
func TestRunServes(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type addrs struct{ grpc, http string }
	started := make(chan addrs, 1)
	done := make(chan error, 1)
	var logs syncBuffer
	go func() {
		done <- run(ctx, []string{"-config", writeFile(t, "ok.yaml", good), "-grpc", "127.0.0.1:0", "-http", "127.0.0.1:0", "-reflection"}, &logs,
			func(g, h string) { started <- addrs{g, h} })
	}()
	var a addrs
	select {
	case a = <-started:
	case err := <-done:
		t.Fatalf("run: %v\n%s", err, logs.String())
	case <-time.After(10 * time.Second):
		t.Fatal("not started within 10 s")
	}
	conn, err := grpc.NewClient(a.grpc, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rls := rlsv3.NewRateLimitServiceClient(conn)
	req := &rlsv3.RateLimitRequest{Domain: "edge", Descriptors: []*ratelimitv3.RateLimitDescriptor{
		{Entries: []*ratelimitv3.RateLimitDescriptor_Entry{{Key: "remote_address", Value: "192.0.2.1"}}},
	}}
	for i, want := range []rlsv3.RateLimitResponse_Code{rlsv3.RateLimitResponse_OK, rlsv3.RateLimitResponse_OVER_LIMIT} {
		resp, err := rls.ShouldRateLimit(ctx, req)
		if err != nil || resp.OverallCode != want {
			t.Fatalf("request %d: %v %v, want %v", i+1, resp.GetOverallCode(), err, want)
		}
	}
	hc, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: "envoy.service.ratelimit.v3.RateLimitService"})
	if err != nil || hc.Status != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("grpc health: %v %v", hc, err)
	}
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + a.http + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, body := get("/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("/healthz: %d %q", code, body)
	}
	if code, body := get("/readyz"); code != 200 || !strings.Contains(body, `"ready":true`) {
		t.Errorf("/readyz: %d %s", code, body)
	}
	_, body := get("/metrics")
	for _, want := range []string{
		`sluice_envoy_requests_total{code="over_limit",domain="edge"} 1`,
		`sluice_decisions_total{outcome="denied",rule="per-ip"} 1`,
		`sluice_envoy_request_duration_seconds_count 2`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run after cancel: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("did not stop within 15 s")
	}
}
