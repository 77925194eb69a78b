package sluicegrpc

// WithRand sets the source of the client interceptor's jitter, for tests.
func WithRand(f func() float64) ClientOption {
	return clientOptionFunc(func(c *clientConfig) error { c.Rand = f; return nil })
}
