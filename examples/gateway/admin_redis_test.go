package main

import (
	"testing"

	"github.com/sluicehq/sluice/internal/redistest/redisstoretest"
)

// TestAdminResetsAClientOnRedis is TestAdminResetsAClient on a
// redis-server started for the test.
func TestAdminResetsAClientOnRedis(t *testing.T) {
	testAdminResetsAClient(t, redisstoretest.New(t))
}
