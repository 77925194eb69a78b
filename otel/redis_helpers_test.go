package sluiceotel_test

import (
	"bufio"
	"context"
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluicehq/sluice/store/redisstore"
)

// startRedis starts a redis-server of its own on a free loopback port,
// without persistence, and stops it by its pid when the test ends. It
// never touches another Redis. Without redis-server on PATH the test is
// skipped, unless REQUIRE_REDIS=1, when it fails.
func startRedis(tb testing.TB) string {
	tb.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("REQUIRE_REDIS") == "1" {
			tb.Fatalf("REQUIRE_REDIS=1 but redis-server is not installed: %v", err)
		}
		tb.Skip("redis-server is not installed (set REQUIRE_REDIS=1 to make this a failure)")
	}
	for range 5 {
		port := freePort(tb)
		cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "",
			"--appendonly", "no", "--dir", tb.TempDir(), "--daemonize", "no", "--protected-mode", "yes")
		if err := cmd.Start(); err != nil {
			tb.Fatalf("start redis-server: %v", err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		addr := "127.0.0.1:" + strconv.Itoa(port)
		if waitPong(addr, exited) {
			tb.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
			return addr
		}
		_ = cmd.Process.Kill()
		<-exited
	}
	tb.Fatal("could not start redis-server on a free port")
	return ""
}

// waitPong waits up to 5 s for the server at addr to answer PING.
func waitPong(addr string, exited <-chan struct{}) bool {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return false
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
			_ = c.SetDeadline(time.Now().Add(time.Second))
			_, _ = c.Write([]byte("PING\r\n"))
			line, err := bufio.NewReader(c).ReadString('\n')
			c.Close()
			if err == nil && line == "+PONG\r\n" {
				return true
			}
		}
		time.Sleep(20 * time.Millisecond) // polling a starting process, not a test's timing
	}
	return false
}

// freePort returns a loopback port that was free a moment ago.
func freePort(tb testing.TB) int {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// redisStore returns a Redis store configured by cfg (its Secret set) on
// a redis-server of the test's own, and its client.
func redisStore(tb testing.TB, cfg redisstore.Config) (*redisstore.Store, redis.UniversalClient) {
	tb.Helper()
	client, err := redisstore.NewClient(startRedis(tb))
	if err != nil {
		tb.Fatal(err)
	}
	cfg.Secret = []byte("otel tests")
	store, err := redisstore.New(client, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = store.Close(ctx)
		_ = client.Close()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := store.Ready(ctx); err != nil {
		tb.Fatalf("the Redis store is not ready: %v", err)
	}
	return store, client
}
