package redisstore_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/store/redisstore"
)

func TestRefusalMemoryConfig(t *testing.T) {
	t.Parallel() // its own redis-server; no package state, no timing
	srv := redistest.Start(t)
	_, err := redisstore.New(newClient(t, srv.Addr), redisstore.Config{RefusalMemory: -1})
	if !errors.Is(err, sluice.ErrInvalidConfig) || !strings.Contains(err.Error(), "RefusalMemory") {
		t.Fatalf("RefusalMemory -1: %v, want an invalid configuration naming the field", err)
	}
}
