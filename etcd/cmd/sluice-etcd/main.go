// Command sluice-etcd checks rule files, publishes them to etcd, and shows
// what the instances watching a key have in force.
//
//	sluice-etcd check rules.yaml                                  # check a rule file, as every watcher will
//	sluice-etcd -endpoints 10.0.0.1:2379 put /sluice/rules.yaml rules.yaml   # check, then write
//	sluice-etcd -endpoints 10.0.0.1:2379 get /sluice/rules.yaml   # the document and its revision
//	sluice-etcd -endpoints 10.0.0.1:2379 watch /sluice/rules.yaml # follow the key as an instance does
//
// A rule file is checked with rulefile.Parse, under the name the watchers
// use ("etcd:" and the key, or -name), so put refuses exactly what the
// watchers would, with the same error, and writes nothing then. Rule files
// that name users, plans or custom keys need what the application
// configures (rulefile.LoadConfig): -user, -plans and -keys stand for it.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/etcd"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/rules/rulefile"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "sluice-etcd:", err)
		os.Exit(1)
	}
}

const usage = `usage: sluice-etcd [flags] check FILE
       sluice-etcd [flags] put KEY FILE
       sluice-etcd [flags] get KEY
       sluice-etcd [flags] watch KEY`

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("sluice-etcd", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintln(stderr, usage); fs.PrintDefaults() }
	endpoints := fs.String("endpoints", "127.0.0.1:2379", "etcd endpoints, comma-separated")
	name := fs.String("name", "", `the name documents are checked under, as the watchers' WithName (default "etcd:" and the key)`)
	timeout := fs.Duration("timeout", 5*time.Second, "bound on each etcd call")
	user := fs.Bool("user", false, "the application finds users (rulefile.LoadConfig.User): accept user and user_endpoint keys")
	plans := fs.Bool("plans", false, "the application finds plans (rulefile.LoadConfig.Plan): accept plans")
	keys := fs.String("keys", "", "custom key names the application registers (rulefile.LoadConfig.Keys), comma-separated")
	if err := fs.Parse(args); err != nil {
		return err
	}
	load := loadConfig(*user, *plans, *keys)
	cmd := fs.Args()
	if len(cmd) == 0 {
		return errors.New(usage)
	}
	var opts []etcd.Option
	if *name != "" {
		opts = append(opts, etcd.WithName(*name))
	}
	opts = append(opts, etcd.WithReadTimeout(*timeout))
	switch {
	case cmd[0] == "check" && len(cmd) == 2:
		data, err := os.ReadFile(cmd[1])
		if err != nil {
			return err
		}
		set, err := rulefile.Parse(cmp.Or(*name, cmd[1]), data, load)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s: %d rules\n", cmd[1], set.Len())
		return nil
	case cmd[0] == "put" && len(cmd) == 3:
		data, err := os.ReadFile(cmd[2])
		if err != nil {
			return err
		}
		cli, err := connect(*endpoints, *timeout)
		if err != nil {
			return err
		}
		defer cli.Close()
		rev, err := etcd.Publish(ctx, cli, cmd[1], data, load, opts...)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s: written at revision %d\n", cmd[1], rev)
		return nil
	case cmd[0] == "get" && len(cmd) == 2:
		cli, err := connect(*endpoints, *timeout)
		if err != nil {
			return err
		}
		defer cli.Close()
		c, cancel := context.WithTimeout(ctx, *timeout)
		defer cancel()
		resp, err := cli.Get(c, cmd[1])
		if err != nil {
			return err
		}
		if len(resp.Kvs) == 0 {
			return fmt.Errorf("%s: %w", cmd[1], etcd.ErrNoRules)
		}
		fmt.Fprintf(stdout, "# %s at revision %d\n%s", cmd[1], resp.Kvs[0].ModRevision, resp.Kvs[0].Value)
		return nil
	case cmd[0] == "watch" && len(cmd) == 2:
		cli, err := connect(*endpoints, *timeout)
		if err != nil {
			return err
		}
		defer cli.Close()
		var w *etcd.Watcher
		opts = append(opts, etcd.WithLogger(discard()),
			etcd.OnReload(func(s *rules.Set) { fmt.Fprintf(stdout, "in force: %d rules (%s)\n", s.Len(), names(s)) }),
			etcd.OnError(func(err error) { fmt.Fprintf(stdout, "refused, the last good rules stay: %v\n", err) }))
		w, err = etcd.Watch(ctx, cli, cmd[1], load, opts...)
		if err != nil {
			return err
		}
		defer w.Close()
		fmt.Fprintf(stdout, "in force: %d rules (%s) at revision %d\n", w.Current().Len(), names(w.Current()), w.Revision())
		<-ctx.Done()
		return nil
	}
	return errors.New(usage)
}

// connect returns a client of endpoints.
func connect(endpoints string, timeout time.Duration) (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{Endpoints: strings.Split(endpoints, ","), DialTimeout: timeout, Logger: zap.NewNop()})
}

// loadConfig stands for the application's LoadConfig: functions that find
// nothing, so that files naming users, plans or custom keys parse.
func loadConfig(user, plans bool, keys string) rulefile.LoadConfig {
	var load rulefile.LoadConfig
	if user {
		load.User = func(context.Context) (string, bool) { return "", false }
	}
	if plans {
		load.Plan = func(*http.Request) string { return "" }
	}
	for _, k := range strings.Split(keys, ",") {
		if k = strings.TrimSpace(k); k != "" {
			if load.Keys == nil {
				load.Keys = map[string]keyfunc.Key{}
			}
			load.Keys[k] = keyfunc.New(k, func(*http.Request) (string, error) { return "", keyfunc.ErrMissing })
		}
	}
	return load
}

func names(s *rules.Set) string {
	var out []string
	for _, r := range s.Rules() {
		out = append(out, r.Name)
	}
	return strings.Join(out, ", ")
}

// discard returns a logger that drops everything: watch prints what it
// sees itself.
func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }
