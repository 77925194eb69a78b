package redisstore_test

import (
	"testing"

	"github.com/sluicehq/sluice/store/storetest"
)

// TestConformanceCluster runs the conformance suite on a 3-master,
// 3-replica Redis Cluster: its multi-hit requests span slots, so they
// exercise one script per slot and the refunds of refused requests.
func TestConformanceCluster(t *testing.T) { storetest.Run(t, realCluster(t)) }
