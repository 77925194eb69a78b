package redisstore_test

import (
	"fmt"
	"log"
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
	defer store.Close()
}
