package sluiceotel_test

import (
	"os"
	"testing"

	"github.com/sluicehq/sluice/internal/redistest/redisstoretest"
)

// TestMain discards go-redis's own logging (SLUICE_REDIS_LOG=1 keeps it),
// so the output shows the tests.
func TestMain(m *testing.M) { os.Exit(redisstoretest.Quiet(m).Run()) }
