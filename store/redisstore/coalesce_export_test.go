package redisstore

// SetBatchCounter makes s's coalescer call f with the number of requests
// each of its script calls carries (1 for a lone call). s must coalesce;
// call it before any Take.
func SetBatchCounter(s *Store, f func(requests int)) { coalescerOf(s).sent = f }
