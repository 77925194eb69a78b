// Package sluice is the core vocabulary of the sluice rate limiter: limits,
// algorithms, hits and results, the [Store] interface that every backend
// implements, the [Clock] that in-process stores read, the [Observer] hook
// other packages report decisions to, and the typed errors.
//
// The package imports the standard library only. The pieces that do the work
// live in sub-packages:
//
//   - store/memstore: the in-process store (the embedded default).
//   - store/redisstore: the Redis store; every hit of a request is decided
//     by one atomic Lua script.
//   - keyfunc: turning a request into an identity (client IP, API key, ...).
//   - rules: rules and matching a request to them.
//   - headers: the RateLimit, draft-06 and X-RateLimit header modes.
//   - middleware: the net/http and chi middleware.
//
// # Decisions
//
// A request matches one or more rules; each becomes a [Hit]. A [Store]
// decides all of a request's hits in one call: the request is admitted if and
// only if every enforcing (non-shadow) hit passes. When it is not admitted
// nothing is consumed. When it is admitted every enforcing hit consumes its
// cost, and a shadow hit consumes only if it passed on its own. Being over the
// limit is a [Result], not an error; errors are reserved for store failures.
//
// # Arithmetic
//
// All stores compute in whole microseconds with integers, so the in-process
// and the Redis store give identical answers for identical inputs. The
// emission interval of a limit (Period/Rate) is rounded up to a whole
// microsecond, which can only make a limit slightly stricter, never looser.
package sluice
