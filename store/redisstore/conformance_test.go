package redisstore_test

import (
	"testing"

	"github.com/sluicehq/sluice/store/storetest"
)

func TestConformanceRealRedis(t *testing.T) { storetest.Run(t, realRedis(t)) }
