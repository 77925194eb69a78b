package etcd_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/etcd"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/rules/rulefile"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// An instance that starts while etcd is away: from the last good snapshot
// when this instance (or an earlier one on its disk) wrote one, else from
// rules fixed in code. Here etcd does not answer and there is no snapshot
// yet, so the fallback rules are in force until etcd's first good
// document arrives, and every document applied from then on is saved.
func ExampleWithSnapshot() {
	cli, err := clientv3.New(clientv3.Config{
		Endpoints: []string{"127.0.0.1:1"}, // nothing answers here
		Logger:    zap.NewNop(),
	})
	if err != nil {
		log.Fatal(err)
	}
	defer cli.Close()
	dir, err := os.MkdirTemp("", "sluice") // in production: a directory that outlives the process
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	fallback := rules.MustNew(rules.Rule{Name: "per-ip", Key: keyfunc.ClientIP(), Limit: sluice.PerMinute(100)})
	w, err := etcd.Watch(context.Background(), cli, "/sluice/rules.yaml", rulefile.LoadConfig{},
		etcd.WithSnapshot(filepath.Join(dir, "rules.yaml")), // written by every good document
		etcd.WithFallback(fallback),
		etcd.WithReadTimeout(200*time.Millisecond),     // how long etcd has to answer at start
		etcd.WithLogger(slog.New(slog.DiscardHandler))) // yours gets a WARN line: "starting from the fallback rules"
	if err != nil {
		log.Fatal(err) // a mistake in the options: with fallback rules there is always a start
	}
	defer w.Close()
	fmt.Println("rules from:", w.Origin())
	fmt.Println("in force:", w.Current().Rules()[0].Name)
	fmt.Println("etcd's revision:", w.Revision())
	// Output:
	// rules from: fallback
	// in force: per-ip
	// etcd's revision: 0
}
