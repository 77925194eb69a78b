package envoy_test

import (
	"os"
	"testing"

	"github.com/sluicehq/sluice/internal/redistest/redisstoretest"
)

// TestMain keeps go-redis's own log lines (dials, retries) out of the test
// output; SLUICE_REDIS_LOG=1 keeps them.
func TestMain(m *testing.M) { os.Exit(redisstoretest.Quiet(m).Run()) }
