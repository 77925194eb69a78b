package redisstore_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"os"

	"github.com/sluicehq/sluice/store/redisstore"
)

// A client for the store from a URL: the URL gives the address, the
// database and the password; the store's settings are always applied.
func ExampleClientOptions() {
	opt, err := redisstore.ClientOptions("redis://:pa55word@127.0.0.1:6379/2")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(opt.Addr, opt.DB, opt.MaxRetries, opt.ContextTimeoutEnabled, opt.DisableIdentity, opt.Protocol)
	// Output: 127.0.0.1:6379 2 -1 true true 2
}

// The store on a client built in one call. (Not run: it needs a Redis.)
func ExampleNewClient() {
	rdb, err := redisstore.NewClient("redis://127.0.0.1:6379/0")
	if err != nil {
		log.Fatal(err)
	}
	defer rdb.Close()
	store, err := redisstore.New(rdb, redisstore.Config{Secret: []byte(os.Getenv("SLUICE_SECRET"))})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close(context.Background())
}

// A Redis Cluster from any of its nodes: several addresses make a cluster
// client. (Not run: it needs a Redis Cluster.)
func ExampleNewClient_cluster() {
	rdb, err := redisstore.NewClient("10.0.0.1:7000", "10.0.0.2:7000", "10.0.0.3:7000")
	if err != nil {
		log.Fatal(err)
	}
	defer rdb.Close()
	store := redisstore.MustNew(rdb, redisstore.Config{Secret: []byte(os.Getenv("SLUICE_SECRET"))})
	defer store.Close(context.Background())
}

// A Sentinel-managed primary, by its master name and the Sentinels'
// addresses. (Not run: it needs Sentinels.)
func ExampleNewFailoverClient() {
	rdb, err := redisstore.NewFailoverClient("mymaster", "10.0.0.1:26379", "10.0.0.2:26379", "10.0.0.3:26379")
	if err != nil {
		log.Fatal(err)
	}
	defer rdb.Close()
	store := redisstore.MustNew(rdb, redisstore.Config{Secret: []byte(os.Getenv("SLUICE_SECRET"))})
	defer store.Close(context.Background())
}

// The options of a cluster client, adjusted before go-redis's constructor:
// the store's settings are applied whatever the URL says.
func ExampleClusterOptions() {
	opt, err := redisstore.ClusterOptions("redis://10.0.0.1:7000?addr=10.0.0.2:7000&max_retries=3")
	if err != nil {
		log.Fatal(err)
	}
	opt.PoolSize = 128
	fmt.Println(opt.Addrs, opt.MaxRetries, opt.ContextTimeoutEnabled, opt.Protocol)
	// Output: [10.0.0.1:7000 10.0.0.2:7000] -1 true 2
}

// go-redis's own lines (failed dials while Redis is down, Sentinel's and
// Cluster's topology changes) go to standard error unless routed: this
// sends them, every go-redis client's in the process, through the
// application's logger, at Warn. (Not run: it changes the process's
// go-redis logger.)
func ExampleSetClientLogger() {
	logger := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	redisstore.SetClientLogger(logger, slog.LevelWarn)
}
