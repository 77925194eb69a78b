package bench

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// RaceResult is the outcome of [Race]: several instances of one peer, each on
// its own client, racing on one key with a small limit.
type RaceResult struct {
	Instances  int   `json:"instances"`
	Goroutines int   `json:"goroutines_per_instance"`
	Attempts   int64 `json:"attempts"`
	Limit      int64 `json:"limit"`
	Admitted   int64 `json:"admitted"`
	Denied     int64 `json:"denied"`
	Errors     int64 `json:"errors"`
	// FirstError is one of the errors, if any, for the report.
	FirstError string        `json:"first_error,omitempty"`
	Elapsed    time.Duration `json:"elapsed_ns"`
}

// Race builds instances of p on e, each with [RaceLimit] on key, and runs
// goroutines per instance until attempts checks have been made (or timeout
// passes). A correct limiter admits exactly the limit.
func Race(ctx context.Context, p RedisPeer, e *Env, key string, instances, goroutines int, attempts int64, timeout time.Duration) (RaceResult, error) {
	spec := RaceLimit(key)
	res := RaceResult{Instances: instances, Goroutines: goroutines, Limit: spec.Burst}
	ls := make([]Limiter, instances)
	for i := range ls {
		l, err := NewRedisLimiter(p, e, spec)
		if err != nil {
			return res, err
		}
		defer l.Close()
		ls[i] = l
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var next, admitted, denied, failed atomic.Int64
	var first atomic.Value
	var wg sync.WaitGroup
	start := make(chan struct{})
	for _, l := range ls {
		for range goroutines {
			w := l.NewWorker()
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for next.Add(1) <= attempts && ctx.Err() == nil {
					ok, err := w(ctx, 0)
					switch {
					case err != nil:
						failed.Add(1)
						first.CompareAndSwap(nil, err.Error())
					case ok:
						admitted.Add(1)
					default:
						denied.Add(1)
					}
				}
			}()
		}
	}
	t0 := time.Now()
	close(start)
	wg.Wait()
	res.Elapsed = time.Since(t0)
	res.Admitted, res.Denied, res.Errors = admitted.Load(), denied.Load(), failed.Load()
	res.Attempts = res.Admitted + res.Denied + res.Errors
	if s, ok := first.Load().(string); ok {
		res.FirstError = s
	}
	return res, nil
}
