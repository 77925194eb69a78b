package bench

import "context"

// Worker decides one check of the key at index key in the run's
// [Spec.Keys]. A worker belongs to one goroutine: it may keep scratch
// space, so it is not safe for concurrent use.
type Worker func(ctx context.Context, key int) (allowed bool, err error)

// Limiter is one configured instance of a peer. It is safe for concurrent
// use through its workers, one per goroutine.
type Limiter interface {
	// NewWorker returns a worker for one goroutine.
	NewWorker() Worker
	// Close releases what the limiter owns (not a client it was given).
	Close() error
}

// shared is a Limiter whose check needs no per-goroutine scratch.
type shared struct {
	check Worker
	close func() error
}

func (s shared) NewWorker() Worker { return s.check }
func (s shared) Close() error {
	if s.close == nil {
		return nil
	}
	return s.close()
}

// perWorker is a Limiter whose workers each build their own scratch.
type perWorker struct {
	newWorker func() Worker
	close     func() error
}

func (p perWorker) NewWorker() Worker { return p.newWorker() }
func (p perWorker) Close() error {
	if p.close == nil {
		return nil
	}
	return p.close()
}
