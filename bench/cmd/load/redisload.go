package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluicehq/sluice/bench"
	"github.com/sluicehq/sluice/bench/internal/hist"
	"github.com/sluicehq/sluice/bench/internal/redisinfo"
)

// snapshot is what is read before and after each measured slice.
type snapshot struct {
	cmds      map[string]uint64
	redisCPU  float64
	trips     int64
	clientCPU time.Duration
	at        time.Time
}

// ignoredCmds are the tool's own and connection set-up commands, not part
// of any check.
var ignoredCmds = map[string]bool{"info": true, "hello": true, "client|setinfo": true, "client": true, "select": true}

func takeSnapshot(ctx context.Context, admin *redis.Client, env *bench.Env) (snapshot, error) {
	text, err := admin.Info(ctx, "commandstats", "cpu").Result()
	if err != nil {
		return snapshot{}, err
	}
	info := redisinfo.ParseInfo(text)
	return snapshot{
		cmds:      redisinfo.CommandCalls(info),
		redisCPU:  redisinfo.CPUSeconds(info),
		trips:     env.RoundTrips(),
		clientCPU: processCPU(),
		at:        time.Now(),
	}, nil
}

// meter measures one configured limiter at one concurrency. Its figures
// accumulate over several slices, so the tool can interleave the limiters
// it compares (a slice of each in turn, several rounds) and a drifting
// background load on the shared machine hits all of them alike.
type meter struct {
	peer    bench.RedisPeer
	spec    bench.Spec
	l       bench.Limiter
	workers []bench.Worker
	next    []int // each goroutine's next key
	hs      []*hist.Histogram

	allowed, denied, failed int64
	firstErr                string
	elapsed                 time.Duration
	trips                   int64
	cmds                    map[string]uint64
	redisCPU                float64
	clientCPU               time.Duration
}

func newMeter(p bench.RedisPeer, env *bench.Env, spec bench.Spec, conc int) (*meter, error) {
	l, err := bench.NewRedisLimiter(p, env, spec)
	if err != nil {
		return nil, err
	}
	m := &meter{peer: p, spec: spec, l: l, cmds: map[string]uint64{}}
	for g := range conc {
		m.workers = append(m.workers, l.NewWorker())
		m.next = append(m.next, (g*7919)%len(spec.Keys))
		m.hs = append(m.hs, new(hist.Histogram))
	}
	return m, nil
}

func (m *meter) close() { m.l.Close() }

// drive runs every goroutine for d. Unless record is false (warm-up) it
// records each check's latency and adds the slice's counts and the Redis
// and client deltas around it.
func (m *meter) drive(ctx context.Context, d time.Duration, record bool, admin *redis.Client, env *bench.Env) error {
	var before snapshot
	if record {
		var err error
		if before, err = takeSnapshot(ctx, admin, env); err != nil {
			return err
		}
	}
	n := len(m.spec.Keys)
	var allowed, denied, failed atomic.Int64
	var first atomic.Value
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for g, w := range m.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h, key := m.hs[g], m.next[g]
			var a, dn, f int64
			for ctx.Err() == nil {
				t0 := time.Now()
				ok, err := w(ctx, key)
				t1 := time.Now()
				if record {
					h.Record(t1.Sub(t0))
				}
				switch {
				case err != nil:
					f++
					first.CompareAndSwap(nil, err.Error())
				case ok:
					a++
				default:
					dn++
				}
				if key++; key == n {
					key = 0
				}
				if t1.After(deadline) {
					break
				}
			}
			m.next[g] = key
			allowed.Add(a)
			denied.Add(dn)
			failed.Add(f)
		}()
	}
	wg.Wait()
	if !record {
		return nil
	}
	after, err := takeSnapshot(ctx, admin, env)
	if err != nil {
		return err
	}
	m.allowed += allowed.Load()
	m.denied += denied.Load()
	m.failed += failed.Load()
	if s, ok := first.Load().(string); ok && m.firstErr == "" {
		m.firstErr = s
	}
	m.elapsed += after.at.Sub(before.at)
	m.trips += after.trips - before.trips
	for name, c := range after.cmds {
		if !ignoredCmds[name] && c > before.cmds[name] {
			m.cmds[name] += c - before.cmds[name]
		}
	}
	m.redisCPU += after.redisCPU - before.redisCPU
	m.clientCPU += after.clientCPU - before.clientCPU
	return nil
}

func (m *meter) result() (RedisRun, error) {
	run := RedisRun{
		Peer: m.peer.Name, Rules: max(m.spec.Rules, 1), Concurrency: len(m.workers), Elapsed: m.elapsed,
		Allowed: m.allowed, Denied: m.denied, Errors: m.failed, FirstError: m.firstErr,
	}
	run.Stacked = run.Rules > 1 && !m.peer.MultiRule
	run.Checks = m.allowed + m.denied + m.failed
	if run.Checks == 0 || m.elapsed <= 0 {
		return run, fmt.Errorf("no check completed")
	}
	var all hist.Histogram
	for _, h := range m.hs {
		all.Merge(h)
	}
	checks := float64(run.Checks)
	run.PerSec = checks / m.elapsed.Seconds()
	run.P50, run.P99, run.P999 = all.Quantile(0.50), all.Quantile(0.99), all.Quantile(0.999)
	run.Mean, run.Max = all.Mean(), all.Max()
	run.RoundTrips = float64(m.trips) / checks
	run.RedisCmdCalls = map[string]float64{}
	var total uint64
	for name, c := range m.cmds {
		total += c
		run.RedisCmdCalls[name] = float64(c) / checks
	}
	run.RedisCmds = float64(total) / checks
	run.RedisCPU = m.redisCPU * 1e6 / checks
	run.RedisCPUPct = 100 * m.redisCPU / m.elapsed.Seconds()
	run.ClientCPU = float64(m.clientCPU.Microseconds()) / checks
	return run, nil
}

// measureInterleaved builds one meter per spec (one limiter each), warms
// each up, then runs rounds rounds of one slice of duration/rounds per
// meter, in turn. A meter that fails to build or run is reported through
// problem and left out.
func measureInterleaved(ctx context.Context, peers []bench.RedisPeer, specs []bench.Spec, conc, rounds int,
	warmup, duration time.Duration, admin *redis.Client, env *bench.Env, problem func(string, ...any)) []RedisRun {
	var meters []*meter
	for i, p := range peers {
		m, err := newMeter(p, env, specs[i], conc)
		if err != nil {
			problem("%s: %v", p.Name, err)
			continue
		}
		defer m.close()
		meters = append(meters, m)
	}
	alive := make([]bool, len(meters))
	for i, m := range meters {
		if err := m.drive(ctx, warmup, false, admin, env); err != nil {
			problem("%s warm-up: %v", m.peer.Name, err)
			continue
		}
		alive[i] = true
	}
	slice := duration / time.Duration(rounds)
	for range rounds {
		for i, m := range meters {
			if !alive[i] || ctx.Err() != nil {
				continue
			}
			if err := m.drive(ctx, slice, true, admin, env); err != nil {
				problem("%s: %v", m.peer.Name, err)
				alive[i] = false
			}
		}
	}
	var out []RedisRun
	for i, m := range meters {
		if !alive[i] {
			continue
		}
		r, err := m.result()
		if err != nil {
			problem("%s at %d goroutines: %v", m.peer.Name, conc, err)
			continue
		}
		out = append(out, r)
	}
	return out
}
