package main

import (
	"bytes"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluicehq/sluice/internal/redistest"
)

// The -redis forms build the client a user expects, with the limiter's
// settings whatever a URL says. Building a client does no I/O.
func TestRedisClientForms(t *testing.T) {
	for _, tc := range []struct {
		target redisTarget
		kind   string
		addrs  []string
	}{
		{redisTarget{spec: "127.0.0.1:6379"}, "single", []string{"127.0.0.1:6379"}},
		{redisTarget{spec: "redis://127.0.0.1:6380/0"}, "single", []string{"127.0.0.1:6380"}},
		{redisTarget{spec: "10.0.0.1:7000, 10.0.0.2:7000,10.0.0.3:7000"}, "cluster", []string{"10.0.0.1:7000", "10.0.0.2:7000", "10.0.0.3:7000"}},
		{redisTarget{spec: "10.0.0.1:7000", cluster: true}, "cluster", []string{"10.0.0.1:7000"}},
		{redisTarget{spec: "redis://10.0.0.1:7000?addr=10.0.0.2:7000&read_timeout=5s"}, "cluster", []string{"10.0.0.1:7000", "10.0.0.2:7000"}},
		{redisTarget{spec: "10.0.0.1:26379,10.0.0.2:26379", master: "mymaster"}, "sentinel", nil},
		{redisTarget{spec: "redis://10.0.0.1:26379?master_name=mymaster"}, "sentinel", nil},
	} {
		t.Run(tc.target.spec, func(t *testing.T) {
			if got := tc.target.kind(); got != tc.kind {
				t.Fatalf("kind %s, want %s", got, tc.kind)
			}
			c, err := newRedisClient(tc.target, 40*time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			switch c := c.(type) {
			case *redis.ClusterClient:
				opt := c.Options()
				if tc.kind != "cluster" || !opt.ContextTimeoutEnabled || opt.Protocol != 2 || opt.ReadTimeout != 40*time.Millisecond || len(opt.Addrs) != len(tc.addrs) {
					t.Fatalf("cluster client %+v for %s", opt, tc.kind)
				}
				for i, a := range tc.addrs {
					if opt.Addrs[i] != a {
						t.Fatalf("addrs %v, want %v", opt.Addrs, tc.addrs)
					}
				}
			case *redis.Client:
				opt := c.Options()
				if opt.MaxRetries != 0 || !opt.ContextTimeoutEnabled || opt.Protocol != 2 || opt.ReadTimeout != 40*time.Millisecond {
					t.Fatalf("client options %+v", opt)
				}
				if tc.kind == "single" && opt.Addr != tc.addrs[0] {
					t.Fatalf("addr %s, want %s", opt.Addr, tc.addrs[0])
				}
				if tc.kind == "sentinel" && opt.Addr != "FailoverClient" {
					t.Fatalf("a %s target gave a client for %s", tc.kind, opt.Addr)
				}
			default:
				t.Fatalf("%T", c)
			}
		})
	}
}

// lockedBuffer is a bytes.Buffer safe for the store's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// The gateway's Redis store starts without a warning: its client keeps
// connections ready, and it has a secret.
func TestRedisStoreStartsQuietly(t *testing.T) {
	srv := redistest.Start(t)
	var out lockedBuffer
	log := slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelWarn}))
	_, closeStore, err := openStore(redisTarget{spec: srv.Addr}, "test secret", 50*time.Millisecond, log, nil)
	if err != nil {
		t.Fatal(err)
	}
	closeStore()
	if s := out.String(); s != "" {
		t.Fatalf("the store warned at start: %s", s)
	}
}
