package redisstore_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/store/redisstore"
)

const memoryKeys = 10_000

// usedMemory reads used_memory once it has settled: Redis grows its key
// tables by incremental rehashing, and until that finishes both tables are
// allocated.
func usedMemory(t *testing.T, c *redis.Client) int64 {
	t.Helper()
	last := readUsedMemory(t, c)
	for range 20 {
		time.Sleep(100 * time.Millisecond)
		n := readUsedMemory(t, c)
		if n == last {
			return n
		}
		last = n
	}
	return last
}

// readUsedMemory returns Redis's used memory less its clients' buffers,
// which grow and shrink with the commands on each connection (a
// connection's set-up loads the store's scripts, tens of kilobytes), not
// with the keys.
func readUsedMemory(t *testing.T, c *redis.Client) int64 {
	t.Helper()
	info := c.Info(context.Background(), "memory").Val()
	var used, clients int64 = -1, -1
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			used, _ = strconv.ParseInt(v, 10, 64)
		}
		if v, ok := strings.CutPrefix(line, "mem_clients_normal:"); ok {
			clients, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	if used < 0 || clients < 0 {
		t.Fatal("no used_memory or mem_clients_normal in INFO")
	}
	return used - clients
}

// TestMemoryPerBucket measures Redis bytes per bucket (used_memory delta over
// 10k buckets, one request each) for every algorithm, against a bare integer
// string with a TTL under a key of the same length. The token bucket and the
// fixed window store one int-encoded integer and must not cost more than
// that baseline.
func TestMemoryPerBucket(t *testing.T) {
	if os.Getenv("SLUICE_LONG") == "" {
		t.Skip("measures Redis memory over many buckets: runs with SLUICE_LONG=1, as .ci/long sets")
	}
	srv := redistest.Start(t)
	c := newClient(t, srv.Addr)
	ctx := context.Background()
	// One connection, as the bare strings below use: each connection's
	// buffers are Redis memory too, and not the buckets'.
	s := newStoreWith(t, c, nil, redisstore.Config{Conns: 1})
	keyLen := len(redisstore.KeyOf(s, sluice.Hit{Key: "x"}))
	// Warm up: the script cache and the Lua VM are not bucket memory.
	redisstore.WaitStartupCheck(s)
	for _, alg := range []sluice.Algorithm{sluice.TokenBucket, sluice.FixedWindow, sluice.SlidingWindow, sluice.SlidingLog} {
		warm := sluice.Hit{Key: "warm", Limit: sluice.PerSecond(1), Algorithm: alg, Cost: 1}
		if err := s.Take(ctx, []sluice.Hit{warm}, make([]sluice.Result, 1)); err != nil {
			t.Fatal(err)
		}
	}
	c.FlushAll(ctx)

	base := usedMemory(t, c)
	now := time.Now().UnixMicro()
	for i := range memoryKeys {
		k := fmt.Sprintf("%0*d", keyLen, i)
		if err := c.Set(ctx, k, now+int64(i), time.Hour).Err(); err != nil {
			t.Fatal(err)
		}
	}
	bare := float64(usedMemory(t, c)-base) / float64(c.DBSize(ctx).Val())
	c.FlushAll(ctx)
	t.Logf("bare integer string with a TTL, %d-byte key: %.1f B per key", keyLen, bare)

	out := make([]sluice.Result, 1)
	for _, alg := range []sluice.Algorithm{sluice.TokenBucket, sluice.FixedWindow, sluice.SlidingWindow, sluice.SlidingLog} {
		base := usedMemory(t, c)
		for i := range memoryKeys {
			// Long TTLs: no bucket may expire while the test runs.
			hit := sluice.Hit{Key: "per-ip\x00ip\x00" + strconv.Itoa(i), Limit: sluice.Per(100, 24*time.Hour), Algorithm: alg, Cost: 1}
			if err := s.Take(ctx, []sluice.Hit{hit}, out); err != nil {
				t.Fatal(err)
			}
		}
		if n := c.DBSize(ctx).Val(); n != memoryKeys {
			t.Fatalf("%v: %d keys, want %d", alg, n, memoryKeys)
		}
		per := float64(usedMemory(t, c)-base) / memoryKeys
		t.Logf("%-14v %.1f B per bucket (%.2f× the bare integer)", alg, per, per/bare)
		if alg != sluice.SlidingLog && per > bare+4 {
			t.Errorf("%v: %.1f B per bucket, more than a bare integer string (%.1f B)", alg, per, bare)
		}
		c.FlushAll(ctx)
	}
}
