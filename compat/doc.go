// Package compat holds the tests that check sluice against other libraries:
// its rate-limit headers parsed by an independent Structured Fields parser
// (github.com/dunglas/httpsfv), its key functions used with
// github.com/go-chi/httprate's and theirs with sluice's, and httprate's
// limiters beside sluice's one-liners in httprate's usual shapes. It is its own
// module so that those libraries stay out of the module graph of programs
// that import sluice.
package compat
