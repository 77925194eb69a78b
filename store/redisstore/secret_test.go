package redisstore_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/sluicehq/sluice/store/redisstore"
)

// TestPublicSecretWarns: a store without a Secret says so, once, at New;
// a store with one says nothing about it.
func TestPublicSecretWarns(t *testing.T) {
	client := redis.NewClient(safeOptions("127.0.0.1:1")) // never dialled
	defer client.Close()
	for _, tc := range []struct {
		name   string
		secret []byte
		warns  int
	}{{"no secret", nil, 1}, {"secret", []byte("0123456789abcdef0123456789abcdef"), 0}} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			log := slog.New(slog.NewTextHandler(&buf, nil))
			s, err := redisstore.New(client, redisstore.Config{Secret: tc.secret, Logger: log, StartupCheckTimeout: -1})
			if err != nil {
				t.Fatal(err)
			}
			s.Close(context.Background())
			if n := strings.Count(buf.String(), "Config.Secret is not set"); n != tc.warns {
				t.Fatalf("%d warnings about the secret, want %d; log:\n%s", n, tc.warns, buf.String())
			}
			if tc.warns > 0 && !strings.Contains(buf.String(), "level=WARN") {
				t.Errorf("not a warning: %s", buf.String())
			}
		})
	}
}
