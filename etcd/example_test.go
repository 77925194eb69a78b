package etcd_test

import (
	"context"
	"log"
	"net/http"
	"os"
	"time"

	"github.com/sluicehq/sluice/etcd"
	"github.com/sluicehq/sluice/middleware"
	"github.com/sluicehq/sluice/rules/rulefile"
	"github.com/sluicehq/sluice/store/memstore"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Rules pushed from etcd to the middleware: every instance watches the
// key, and a change is in force as soon as etcd delivers it.
func Example() {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"127.0.0.1:2379"}, DialTimeout: 2 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	defer cli.Close()
	rules, err := etcd.Watch(context.Background(), cli, "/sluice/rules.yaml", rulefile.LoadConfig{})
	if err != nil {
		log.Fatal(err) // no rules, or rules with a mistake: do not start
	}
	defer rules.Close()

	store := memstore.New(memstore.Config{})
	defer store.Close(context.Background())
	limiter, err := middleware.New(store, rules)
	if err != nil {
		log.Fatal(err)
	}
	api := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok\n")) })
	log.Fatal(http.ListenAndServe(":8080", limiter.Handler(api)))
}

// Publishing a rule file: it is checked as the watchers will check it, and
// written only if it passes.
func ExamplePublish() {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"127.0.0.1:2379"}, DialTimeout: 2 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	defer cli.Close()
	data, err := os.ReadFile("rules.yaml")
	if err != nil {
		log.Fatal(err)
	}
	rev, err := etcd.Publish(context.Background(), cli, "/sluice/rules.yaml", data, rulefile.LoadConfig{})
	if err != nil {
		log.Fatal(err) // rulefile: etcd:/sluice/rules.yaml:12: rule "per-ip": ...
	}
	log.Printf("rules written at revision %d", rev)
}
