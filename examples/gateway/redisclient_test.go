package main

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
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
				if tc.kind != "cluster" || !opt.ContextTimeoutEnabled || opt.ReadTimeout != 40*time.Millisecond || len(opt.Addrs) != len(tc.addrs) {
					t.Fatalf("cluster client %+v for %s", opt, tc.kind)
				}
				for i, a := range tc.addrs {
					if opt.Addrs[i] != a {
						t.Fatalf("addrs %v, want %v", opt.Addrs, tc.addrs)
					}
				}
			case *redis.Client:
				opt := c.Options()
				if opt.MaxRetries != 0 || !opt.ContextTimeoutEnabled || opt.ReadTimeout != 40*time.Millisecond {
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
