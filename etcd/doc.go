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
// Every error about the arguments or options wraps sluice.ErrInvalidConfig;
// every refused document is a *rulefile.FileError, as from a rule file.
package etcd
