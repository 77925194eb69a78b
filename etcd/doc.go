// Package etcd keeps rate-limit rules in etcd and pushes them to every
// instance: a [Watcher] follows one key holding a rule file's document
// (YAML or JSON, the format of the rulefile package) with an etcd watch,
// checks each change in full before it replaces the rules in force, and
// keeps the last good rules when a change is refused or etcd goes away. A
// Watcher is a rule source wherever a *rules.Set or a *rulefile.Watcher is
// one ([rules.Source]): the middleware's, the gRPC interceptors' and
// rules/admin's.
//
//	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"10.0.0.1:2379"}})
//	...
//	w, err := etcd.Watch(ctx, cli, "/sluice/rules.yaml", rulefile.LoadConfig{})
//	...
//	defer w.Close()
//	limiter, err := middleware.New(store, w)
//
// Write a document with [Publish], which checks it as the watchers will
// and refuses it before it is written if it has a mistake, or with any
// etcd client (etcdctl put /sluice/rules.yaml "$(cat rules.yaml)"): every
// watcher checks every change itself.
//
// A change reaches the watchers as soon as etcd delivers it to them,
// typically within milliseconds. A refused change is logged, reported to
// [OnError] and [Watcher.Err], and leaves the rules in force: every
// instance refuses it with the same error, since every instance parses
// the same document under the same name. Deleting the key is refused the
// same way (see [ErrNoRules]). While etcd cannot be reached, the rules in
// force stay; the watch resumes when it answers again, and the changes
// made meanwhile apply then.
//
// # Starting without etcd's rules
//
// By default [Watch] refuses to start without a good document in etcd.
// An instance given a snapshot file ([WithSnapshot]), fallback rules
// ([WithFallback]), or both, starts from the first of these that has good
// rules:
//
//  1. etcd's document;
//  2. the last good snapshot: the file where the instance saves each
//     document it applies (written to a temporary file and renamed over
//     the snapshot, so it is never half-written), read when etcd's
//     document is refused, the key is missing, or etcd does not answer
//     within the context and the read timeout ([WithReadTimeout]);
//  3. the fallback rules given in code.
//
// One bad write to etcd, or etcd down, then cannot keep a restarted or new
// instance from starting. The watcher takes etcd's next good document as
// soon as one arrives (the watch goes on), and saves it.
//
//	w, err := etcd.Watch(ctx, cli, "/sluice/rules.yaml", rulefile.LoadConfig{},
//		etcd.WithSnapshot("/var/lib/myapp/sluice-rules.yaml"),
//		etcd.WithFallback(rules.MustNew(rules.Rule{Name: "per-ip", Key: keyfunc.ClientIP(), Limit: sluice.PerMinute(100)})))
//
// Where the rules in force came from is said three ways: the start's log
// line (INFO "rules loaded from etcd", or WARN "starting from the last good
// snapshot" or "starting from the fallback rules", with the attribute
// origin=etcd|snapshot|fallback and why etcd's document was not used),
// [Watcher.Origin], and a gauge. Nothing is dropped in silence: a snapshot
// that cannot be written is logged at ERROR and counted, and the rules
// still apply; a snapshot that is missing, unreadable or itself refused is
// logged at ERROR with its error, passed to OnError, counted, and the
// fallback rules are used (without them, Watch fails with both errors).
//
// # Metrics
//
// [WithRegisterer] registers, with a Prometheus registry:
//
//	sluice_etcd_rules_origin{key, origin}        gauge: 1 for where the rules in force came from (etcd, snapshot, fallback), 0 for the others
//	sluice_etcd_snapshot_errors_total{key, op}   counter: snapshots not written (op="write") or not usable at start (op="read")
//
// The origin is a gauge, not a count of starts, since what an operator
// needs during an incident is which instances are not on etcd's rules now
// (sluice_etcd_rules_origin{origin!="etcd"} == 1), and that changes when
// etcd's next good document arrives. Other sinks can read
// [Watcher.Origin] (from an OpenTelemetry observable gauge's callback,
// say) and hook OnError.
//
// Every error about the arguments or options wraps sluice.ErrInvalidConfig;
// every refused document is a *rulefile.FileError, as from a rule file.
package etcd
