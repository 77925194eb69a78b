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
	c, err := parse(args, stderr)
	if err != nil {
		return err
	}
	c.stdout = stdout
	switch a := c.args; {
	case a[0] == "check" && len(a) == 2:
		return c.check(a[1])
	case a[0] == "put" && len(a) == 3:
		return c.put(ctx, a[1], a[2])
	case a[0] == "get" && len(a) == 2:
		return c.get(ctx, a[1])
	case a[0] == "watch" && len(a) == 2:
		return c.watch(ctx, a[1])
	}
	return errors.New(usage)
}

// command is a command line, parsed.
type command struct {
	endpoints string
	name      string // -name; "": the watchers' default
	timeout   time.Duration
	load      rulefile.LoadConfig
	args      []string // the subcommand and its arguments, at least one
	stdout    io.Writer
}

// parse parses the command line args, writing flag errors and usage to
// stderr.
func parse(args []string, stderr io.Writer) (*command, error) {
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
		return nil, err
	}
	if fs.NArg() == 0 {
		return nil, errors.New(usage)
	}
	return &command{endpoints: *endpoints, name: *name, timeout: *timeout, load: loadConfig(*user, *plans, *keys), args: fs.Args()}, nil
}

// options returns the options of Publish and Watch the flags give.
func (c *command) options() []etcd.Option {
	var opts []etcd.Option
	if c.name != "" {
		opts = append(opts, etcd.WithName(c.name))
	}
	return append(opts, etcd.WithReadTimeout(c.timeout))
}

// check checks the rule file at path.
func (c *command) check(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	set, err := rulefile.Parse(cmp.Or(c.name, path), data, c.load)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "%s: %d rules\n", path, set.Len())
	return nil
}

// put checks the rule file at path and writes it to key.
func (c *command) put(ctx context.Context, key, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	cli, err := connect(c.endpoints, c.timeout)
	if err != nil {
		return err
	}
	defer cli.Close()
	rev, err := etcd.Publish(ctx, cli, key, data, c.load, c.options()...)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "%s: written at revision %d\n", key, rev)
	return nil
}

// get prints the document at key and its revision.
func (c *command) get(ctx context.Context, key string) error {
	cli, err := connect(c.endpoints, c.timeout)
	if err != nil {
		return err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	resp, err := cli.Get(ctx, key)
	if err != nil {
		return err
	}
	if len(resp.Kvs) == 0 {
		return fmt.Errorf("%s: %w", key, etcd.ErrNoRules)
	}
	fmt.Fprintf(c.stdout, "# %s at revision %d\n%s", key, resp.Kvs[0].ModRevision, resp.Kvs[0].Value)
	return nil
}

// watch follows key as an instance does, printing the rules in force and
// the documents refused, until ctx ends.
func (c *command) watch(ctx context.Context, key string) error {
	cli, err := connect(c.endpoints, c.timeout)
	if err != nil {
		return err
	}
	defer cli.Close()
	opts := append(c.options(), etcd.WithLogger(discard()),
		etcd.OnReload(func(s *rules.Set) { fmt.Fprintf(c.stdout, "in force: %d rules (%s)\n", s.Len(), names(s)) }),
		etcd.OnError(func(err error) { fmt.Fprintf(c.stdout, "refused, the last good rules stay: %v\n", err) }))
	w, err := etcd.Watch(ctx, cli, key, c.load, opts...)
	if err != nil {
		return err
	}
	defer w.Close()
	fmt.Fprintf(c.stdout, "in force: %d rules (%s) at revision %d\n", w.Current().Len(), names(w.Current()), w.Revision())
	<-ctx.Done()
	return nil
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
