package main

import (
	"os"
	"testing"

	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/redistest/redisstoretest"
)

// TestMain says in one line when tests that need redis-server were skipped,
// and keeps go-redis's own log lines out of the output (SLUICE_REDIS_LOG=1
// keeps them).
func TestMain(m *testing.M) { os.Exit(redisstoretest.Quiet(redistest.ReportSkips(m)).Run()) }
