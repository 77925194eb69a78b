package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/store/redisstore"
)

// TestNewClientForms: each form of address NewClient takes gives the
// client of its topology, with the store's settings whatever a URL says,
// and the store takes it without a warning. Building a client does no I/O.
func TestNewClientForms(t *testing.T) {
	for _, tc := range []struct {
		name  string
		addrs []string
		kind  string // single, cluster or sentinel
		check func(t *testing.T, c redis.UniversalClient)
	}{
		{"an address", []string{"127.0.0.1:1"}, "single", func(t *testing.T, c redis.UniversalClient) {
			if opt := c.(*redis.Client).Options(); opt.Addr != "127.0.0.1:1" {
				t.Fatalf("addr %s", opt.Addr)
			}
		}},
		{"a URL", []string{"redis://:pw@127.0.0.1:1/2?max_retries=5&read_timeout=2s&protocol=3"}, "single", func(t *testing.T, c redis.UniversalClient) {
			opt := c.(*redis.Client).Options()
			if opt.Addr != "127.0.0.1:1" || opt.DB != 2 || opt.Password != "pw" || opt.ReadTimeout != 2*time.Second || opt.Protocol != 2 {
				t.Fatalf("options %+v", opt)
			}
		}},
		{"a TLS URL", []string{"rediss://127.0.0.1:1"}, "single", func(t *testing.T, c redis.UniversalClient) {
			if opt := c.(*redis.Client).Options(); opt.TLSConfig == nil {
				t.Fatal("no TLS")
			}
		}},
		{"a unix socket URL", []string{"unix:///nonexistent/redis.sock"}, "single", func(t *testing.T, c redis.UniversalClient) {
			if opt := c.(*redis.Client).Options(); opt.Network != "unix" {
				t.Fatalf("network %s", opt.Network)
			}
		}},
		{"several addresses", []string{"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"}, "cluster", func(t *testing.T, c redis.UniversalClient) {
			if opt := c.(*redis.ClusterClient).Options(); strings.Join(opt.Addrs, ",") != "127.0.0.1:1,127.0.0.1:2,127.0.0.1:3" {
				t.Fatalf("addrs %v", opt.Addrs)
			}
		}},
		{"a cluster URL", []string{"redis://127.0.0.1:1?addr=127.0.0.1:2&route_randomly=true&read_only=true"}, "cluster", func(t *testing.T, c redis.UniversalClient) {
			opt := c.(*redis.ClusterClient).Options()
			if strings.Join(opt.Addrs, ",") != "127.0.0.1:1,127.0.0.1:2" || opt.RouteRandomly || opt.ReadOnly {
				t.Fatalf("options %+v", opt)
			}
		}},
		{"a Sentinel URL", []string{"redis://127.0.0.1:1?master_name=mymaster&addr=127.0.0.1:2"}, "sentinel", func(t *testing.T, c redis.UniversalClient) {
			if opt := c.(*redis.Client).Options(); opt.Addr != "FailoverClient" {
				t.Fatalf("a client of %s", opt.Addr)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := redisstore.NewClient(tc.addrs...)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			switch cc := c.(type) {
			case *redis.Client:
				opt := cc.Options()
				if tc.kind == "cluster" || opt.MaxRetries != 0 || !opt.ContextTimeoutEnabled || opt.Protocol != 2 || !opt.DisableIdentity || opt.DialerRetries != 1 || opt.PoolSize != 64 {
					t.Fatalf("%s: client options %+v", tc.kind, opt)
				}
			case *redis.ClusterClient:
				opt := cc.Options()
				if tc.kind != "cluster" || !opt.ContextTimeoutEnabled || opt.Protocol != 2 || !opt.DisableIdentity || opt.DialerRetries != 1 {
					t.Fatalf("%s: cluster options %+v", tc.kind, opt)
				}
			default:
				t.Fatalf("%T", c)
			}
			tc.check(t, c)
			var logs records
			s, err := redisstore.New(c, redisstore.Config{Logger: slog.New(&logs), Secret: []byte("test secret"), StartupCheckTimeout: -1, PolicyCheckInterval: -1, PresenceInterval: -1})
			if err != nil {
				t.Fatal(err)
			}
			s.Close(context.Background())
			if warned := logs.atLeast(slog.LevelWarn); len(warned) > 0 {
				t.Fatalf("warned: %q", warned)
			}
		})
	}
	t.Run("one cluster seed", func(t *testing.T) {
		c, err := redisstore.NewClusterClient("127.0.0.1:1")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if opt := c.Options(); len(opt.Addrs) != 1 || !opt.ContextTimeoutEnabled {
			t.Fatalf("options %+v", opt)
		}
	})
	t.Run("Sentinels by name", func(t *testing.T) {
		opt, err := redisstore.FailoverOptions("mymaster", "127.0.0.1:1", "127.0.0.1:2")
		if err != nil {
			t.Fatal(err)
		}
		if opt.MasterName != "mymaster" || len(opt.SentinelAddrs) != 2 || opt.MaxRetries != -1 || !opt.ContextTimeoutEnabled || opt.Protocol != 2 {
			t.Fatalf("options %+v", opt)
		}
		opt, err = redisstore.FailoverOptions("other", "redis://127.0.0.1:1?master_name=mymaster&replica_only=true")
		if err != nil {
			t.Fatal(err)
		}
		if opt.MasterName != "other" || opt.ReplicaOnly {
			t.Fatalf("options %+v", opt)
		}
		c, err := redisstore.NewFailoverClient("mymaster", "127.0.0.1:1")
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
	})
}

// TestNewClientRefusesWhatItCannotRead: a missing or malformed address is
// a configuration error, which never repeats a URL's password.
func TestNewClientRefusesWhatItCannotRead(t *testing.T) {
	for _, tc := range []struct {
		name string
		new  func() error
	}{
		{"no address", func() error { _, err := redisstore.NewClient(); return err }},
		{"no port", func() error { _, err := redisstore.NewClient("localhost"); return err }},
		{"a URL among addresses", func() error { _, err := redisstore.NewClient("127.0.0.1:1", "redis://127.0.0.1:2"); return err }},
		{"an unknown URL parameter", func() error { _, err := redisstore.NewClient("redis://u:s3cr3t@127.0.0.1:1?bogus=1"); return err }},
		{"a URL that does not parse", func() error { _, err := redisstore.NewClient("redis://u:s3cr3t@127.0.0.1:1:2:%zz"); return err }},
		{"a cluster URL's unknown parameter", func() error {
			_, err := redisstore.NewClient("redis://u:s3cr3t@127.0.0.1:1?addr=127.0.0.1:2&bogus=1")
			return err
		}},
		{"no cluster address", func() error { _, err := redisstore.NewClusterClient(); return err }},
		{"no Sentinel master name", func() error { _, err := redisstore.NewFailoverClient("", "127.0.0.1:1"); return err }},
		{"no Sentinel", func() error { _, err := redisstore.NewFailoverClient("mymaster"); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.new()
			if !errors.Is(err, sluice.ErrInvalidConfig) || !strings.Contains(err.Error(), "redisstore") {
				t.Fatalf("err = %v, want a redisstore error wrapping sluice.ErrInvalidConfig", err)
			}
			if strings.Contains(err.Error(), "s3cr3t") {
				t.Fatalf("err = %v repeats the password", err)
			}
		})
	}
	defer func() {
		if recover() == nil {
			t.Fatal("MustNewClient did not panic")
		}
	}()
	redisstore.MustNewClient("localhost")
}

// TestClientFormsStartQuietly builds the store on every form of client the
// documentation shows, against a real single node, a 3-master Redis
// Cluster and a Sentinel set: each decides, and none logs a warning
// (the store is given a secret). The hand-built single-node client without
// Protocol 2 is the one that warns, naming it.
func TestClientFormsStartQuietly(t *testing.T) {
	t.Parallel() // its own redis-server; no package state, no timing
	type form struct {
		name string
		new  func() (redisstore.Client, error)
	}
	run := func(t *testing.T, forms []form, ready bool) {
		t.Helper()
		for _, f := range forms {
			t.Run(f.name, func(t *testing.T) {
				c, err := f.new()
				if err != nil {
					t.Fatal(err)
				}
				defer c.(interface{ Close() error }).Close()
				var logs records
				s, err := redisstore.New(c, redisstore.Config{Logger: slog.New(&logs), Secret: []byte("test secret")})
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close(context.Background())
				redisstore.WaitStartupCheck(s)
				if ready {
					waitConnsReady(t, s)
				}
				hits := []sluice.Hit{
					{Key: f.name + "/a", Limit: sluice.PerMinute(5), Cost: 1},
					{Key: f.name + "/b", Algorithm: sluice.SlidingWindow, Limit: sluice.PerMinute(5), Cost: 1},
				}
				out := make([]sluice.Result, len(hits))
				ctx, cancel := context.WithTimeout(context.Background(), ceiling) // against hangs
				defer cancel()
				if err := s.Take(ctx, hits, out); err != nil || !out[0].Allowed || !out[1].Allowed {
					t.Fatalf("take: %+v, %v; want both allowed", out, err)
				}
				if warned := logs.atLeast(slog.LevelWarn); len(warned) > 0 {
					t.Fatalf("warned: %q", warned)
				}
			})
		}
	}
	t.Run("single", func(t *testing.T) {
		srv := redistest.Start(t)
		run(t, []form{
			{"NewClient address", func() (redisstore.Client, error) { return redisstore.NewClient(srv.Addr) }},
			{"NewClient URL", func() (redisstore.Client, error) { return redisstore.NewClient("redis://" + srv.Addr + "/0") }},
			{"MustNewClient", func() (redisstore.Client, error) { return redisstore.MustNewClient(srv.Addr), nil }},
			{"hand-built", func() (redisstore.Client, error) {
				return redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, ContextTimeoutEnabled: true, Protocol: 2}), nil
			}},
		}, true)
		// Without Protocol 2 the store keeps no ready connections, and says
		// so once.
		var logs records
		c := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, ContextTimeoutEnabled: true})
		defer c.Close()
		s, err := redisstore.New(c, redisstore.Config{Logger: slog.New(&logs), Secret: []byte("test secret"), StartupCheckTimeout: -1})
		if err != nil {
			t.Fatal(err)
		}
		s.Close(context.Background())
		if warned := logs.atLeast(slog.LevelWarn); len(warned) != 1 || !strings.Contains(warned[0], "Protocol: 2") {
			t.Fatalf("warned %q, want one warning naming Protocol: 2", warned)
		}
	})
	t.Run("cluster", func(t *testing.T) {
		cl := redistest.StartCluster(t, redistest.ClusterOptions{Replicas: -1})
		addrs := cl.Addrs()
		run(t, []form{
			{"NewClient addresses", func() (redisstore.Client, error) { return redisstore.NewClient(addrs...) }},
			{"NewClient URL", func() (redisstore.Client, error) {
				return redisstore.NewClient(fmt.Sprintf("redis://%s?addr=%s&addr=%s", addrs[0], addrs[1], addrs[2]))
			}},
			{"NewClusterClient one seed", func() (redisstore.Client, error) { return redisstore.NewClusterClient(addrs[1]) }},
			{"hand-built", func() (redisstore.Client, error) {
				return redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, ContextTimeoutEnabled: true}), nil
			}},
		}, false)
	})
	t.Run("sentinel", func(t *testing.T) {
		ss := redistest.StartSentinel(t)
		sn := ss.Addrs()
		run(t, []form{
			{"NewFailoverClient", func() (redisstore.Client, error) {
				return redisstore.NewFailoverClient(redistest.MasterName, sn...)
			}},
			{"NewClient URL", func() (redisstore.Client, error) {
				return redisstore.NewClient(fmt.Sprintf("redis://%s?master_name=%s&addr=%s&addr=%s", sn[0], redistest.MasterName, sn[1], sn[2]))
			}},
			{"hand-built", func() (redisstore.Client, error) {
				return redis.NewFailoverClient(&redis.FailoverOptions{
					MasterName: redistest.MasterName, SentinelAddrs: sn, MaxRetries: -1, ContextTimeoutEnabled: true,
				}), nil
			}},
		}, true)
	})
}
