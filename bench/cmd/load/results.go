package main

import (
	"time"

	"github.com/sluicehq/sluice/bench"
)

// Results is everything one run of the tool measured: results.json.
type Results struct {
	Machine   Machine           `json:"machine"`
	Command   string            `json:"command"`
	Settings  Settings          `json:"settings"`
	InProcess []InProcessResult `json:"in_process,omitempty"`
	Redis     []RedisRun        `json:"redis,omitempty"`
	RedisHot  []RedisRun        `json:"redis_hot_key,omitempty"` // as Redis, on one key
	MultiRule []RedisRun        `json:"multi_rule,omitempty"`
	Race      []RaceRow         `json:"race,omitempty"`
	Leases    []LeaseRun        `json:"leases,omitempty"`
	E2E       []E2ERun          `json:"end_to_end,omitempty"`
	Problems  []string          `json:"problems,omitempty"`
	Peers     map[string]string `json:"peers"` // name -> algorithm
	Versions  map[string]string `json:"versions"`
	Elapsed   time.Duration     `json:"elapsed_ns"`
}

// Machine describes where the figures come from.
type Machine struct {
	Date         string  `json:"date"`
	CPUModel     string  `json:"cpu_model"`
	NumCPU       int     `json:"nproc"`
	GOMAXPROCS   int     `json:"gomaxprocs"`
	GoVersion    string  `json:"go_version"`
	RedisVersion string  `json:"redis_version"`
	Kernel       string  `json:"kernel"`
	LoadBefore   string  `json:"loadavg_before"`
	LoadAfter    string  `json:"loadavg_after"`
	MemGiB       float64 `json:"mem_gib"`
}

// Settings are the flags of the run that shape its figures.
type Settings struct {
	Phases        []string      `json:"phases"`
	Concurrency   []int         `json:"concurrency"`
	Duration      time.Duration `json:"duration_ns"`
	Warmup        time.Duration `json:"warmup_ns"`
	Keys          int           `json:"keys"`
	PoolSize      int           `json:"pool_size"`
	Rules         int           `json:"multi_rules"`
	Rounds        int           `json:"rounds"`
	MultiDuration time.Duration `json:"multi_duration_ns"`
	LeaseDuration time.Duration `json:"lease_duration_ns,omitempty"`
	BenchTime     string        `json:"benchtime"`
	E2ERates      []int         `json:"e2e_rates"`
	E2EDuration   time.Duration `json:"e2e_duration_ns"`
	E2EConc       int           `json:"e2e_concurrency"`
	E2EWorkers    int           `json:"e2e_workers"`
	Limit         bench.Spec    `json:"limit"`
}

// InProcessResult is one testing.B measurement.
type InProcessResult struct {
	Peer        string  `json:"peer"`
	Mode        string  `json:"mode"`
	N           int     `json:"n"`
	NsPerOp     float64 `json:"ns_per_op"`
	AllocsPerOp int64   `json:"allocs_per_op"`
	BytesPerOp  int64   `json:"bytes_per_op"`
	DeniedPerOp float64 `json:"denied_per_op,omitempty"`
	ErrorsPerOp float64 `json:"errors_per_op,omitempty"`
	// Samples are the ns/op of every round; NsPerOp is their median.
	Samples []float64 `json:"samples_ns_per_op,omitempty"`
}

// RedisRun is one peer at one concurrency against Redis.
type RedisRun struct {
	Peer        string        `json:"peer"`
	Rules       int           `json:"rules"`
	Stacked     bool          `json:"stacked,omitempty"` // one call per rule
	Concurrency int           `json:"concurrency"`
	Elapsed     time.Duration `json:"elapsed_ns"`
	Checks      int64         `json:"checks"`
	Allowed     int64         `json:"allowed"`
	Denied      int64         `json:"denied"`
	Errors      int64         `json:"errors"`
	FirstError  string        `json:"first_error,omitempty"`
	PerSec      float64       `json:"checks_per_sec"`
	P50         time.Duration `json:"p50_ns"`
	P99         time.Duration `json:"p99_ns"`
	P999        time.Duration `json:"p999_ns"`
	Mean        time.Duration `json:"mean_ns"`
	Max         time.Duration `json:"max_ns"`
	// RoundTrips counts commands and pipelines the client sent, per check.
	RoundTrips float64 `json:"round_trips_per_check"`
	// RedisCmds is Redis's own count (INFO commandstats, including the
	// commands scripts and transactions run), per check.
	RedisCmds     float64            `json:"redis_cmds_per_check"`
	RedisCmdCalls map[string]float64 `json:"redis_cmds_by_name_per_check"`
	// RedisCPU is the server's main-thread CPU per check, in µs (see
	// redisinfo.CPUSeconds).
	RedisCPU float64 `json:"redis_cpu_us_per_check"`
	// RedisCPUPct is Redis's CPU over the run, in % of one core.
	RedisCPUPct float64 `json:"redis_cpu_pct"`
	// ClientCPU is this process's CPU per check, in µs.
	ClientCPU float64 `json:"client_cpu_us_per_check"`
}

// RaceRow is a peer's correctness race.
type RaceRow struct {
	Peer string `json:"peer"`
	bench.RaceResult
}

// E2ERun is one HTTP load run against one server.
type E2ERun struct {
	Server      string        `json:"server"` // none, memstore, redis
	Mode        string        `json:"mode"`   // open (fixed rate) or closed (saturation)
	Rate        int           `json:"target_rate,omitempty"`
	Concurrency int           `json:"concurrency"`
	Elapsed     time.Duration `json:"elapsed_ns"`
	Requests    int64         `json:"requests"`
	Errors      int64         `json:"errors"`
	Non200      int64         `json:"non_200"`
	// StoreFailures counts requests the middleware could not decide (the
	// store failed or exceeded its budget) over the run and its warm-up.
	StoreFailures int64         `json:"store_failures"`
	FirstError    string        `json:"first_error,omitempty"`
	PerSec        float64       `json:"req_per_sec"`
	P50           time.Duration `json:"p50_ns"`
	P99           time.Duration `json:"p99_ns"`
	P999          time.Duration `json:"p999_ns"`
	Max           time.Duration `json:"max_ns"`
	// MiddlewareP50, P99 and P999 are measured inside the server: the time
	// from a request entering the middleware to the middleware calling the
	// handler (0 for the server without a limiter).
	MiddlewareP50  time.Duration `json:"middleware_p50_ns,omitempty"`
	MiddlewareP99  time.Duration `json:"middleware_p99_ns,omitempty"`
	MiddlewareP999 time.Duration `json:"middleware_p999_ns,omitempty"`
	// ServerCPU is the server process's CPU time (user and system, from
	// getrusage) over the measured slices, per request: what the server
	// costs the machine, free of the latency figures' queueing noise.
	ServerCPU time.Duration `json:"server_cpu_ns_per_request,omitempty"`
}
