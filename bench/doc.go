// Package bench compares sluice with peer rate-limiting libraries; its
// command, cmd/load, reproduces BENCHMARKS.md in one run
// (cd bench && go run ./cmd/load). Every peer is configured alike: the
// same limit (high enough that every check is admitted, unless a run is
// about refusing), the same key space, and for the Redis-backed ones the
// same go-redis client settings.
//
// It holds two tables of named constructors, one entry per variant:
//
//   - [InProcessPeers]: in-process limiters, measured by the testing.B
//     benchmarks of this package (go test -bench .) and by cmd/load;
//   - [RedisPeers]: Redis-backed limiters and baselines, measured by
//     cmd/load against a redis-server it starts on a free loopback port.
//
// Adding a variant (say, a sluice store with coalescing turned on) is one
// more entry in a table; every benchmark, table and chart picks it up.
//
// This is its own module, so the peers' dependencies never reach the main
// module's go.mod.
package bench
