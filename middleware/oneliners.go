package middleware

import (
	"fmt"
	"net/http"
	"strconv"
	"sync"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/decide"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/rules"
)

// LimitBy returns middleware limiting the requests of each identity key
// gives to limit, on store: one rule, with every default of [rules.Rule]
// (a token bucket, on_fail local). A request without the identity is not
// counted (see [keyfunc.Key.Required]); a key function of httprate's shape
// says so by returning "". It is [Limit] with a one-rule set, for the
// cases httprate's one-liners cover; several rules, matches, shadow rules
// and rule files need [rules.Set]. It panics if limit is invalid or an
// option is: for configurations fixed in code.
//
// # Names and buckets
//
// Each one-liner counts in buckets of its own, as each of httprate's
// limiters does, so a global LimitByIP and a stricter one on a login route
// never share a bucket. Its rule, which names it in the headers, problem
// details, metrics and logs and is part of its bucket keys, is named by
// [WithName], or else after the key's kind and the order the one-liners of
// that kind are made in the process: the first "ip" (or "api_key",
// "global", ...), the second "ip-2", the third "ip-3". Instances of one
// program that make their one-liners in the same order, at start-up, name
// them alike and so share their buckets through a shared store. Name them
// with WithName when the order can differ (one-liners made concurrently,
// or again when a router is rebuilt, or by different programs sharing a
// store); two one-liners given the same name and keyed by the same kind
// share their buckets.
func LimitBy(store sluice.Store, limit sluice.Limit, key keyfunc.Key, opts ...Option) func(http.Handler) http.Handler {
	l := &Limiter{cfg: config{deny: WriteDenial, onError: WriteError}}
	d, err := decide.NewFrontEnd("middleware", store, &l.cfg, opts)
	if err != nil {
		panic(err)
	}
	l.decider = d
	name := l.cfg.oneLiner
	switch {
	case l.cfg.named && name == "":
		panic(fmt.Errorf("%w: middleware: WithName: empty name", sluice.ErrInvalidConfig))
	case !l.cfg.named:
		name = oneLiners.next(key.Kind())
	}
	l.rules = rules.MustNew(rules.Rule{Name: name, Key: key, Limit: limit})
	return l.Handler
}

// LimitByIP returns middleware limiting each client address to limit, on
// store: the TCP peer, IPv6 grouped by /64 ([keyfunc.ClientIP]). Behind a
// proxy every request has the proxy's address: use [LimitByRealIP]. Its
// buckets are its own (see [LimitBy]).
func LimitByIP(store sluice.Store, limit sluice.Limit, opts ...Option) func(http.Handler) http.Handler {
	return LimitBy(store, limit, keyfunc.ClientIP(), opts...)
}

// LimitByRealIP returns middleware limiting each client address to limit,
// on store, behind proxies: trusted are the proxies' networks (CIDRs such
// as "10.0.0.0/8"), and the client is the rightmost address of
// X-Forwarded-For that is not one of them ([keyfunc.XFF]); a request from
// anywhere else is keyed by its TCP peer. Unlike httprate.LimitByRealIP it
// never believes a header sent by the client itself. Its buckets are its
// own (see [LimitBy]). It panics on an invalid CIDR: for configurations
// fixed in code (with CIDRs read at run time, build the key with
// [keyfunc.ParsePrefixes], [keyfunc.XFF] and [keyfunc.IP], and call
// [LimitBy]).
func LimitByRealIP(store sluice.Store, limit sluice.Limit, trusted []string, opts ...Option) func(http.Handler) http.Handler {
	nets, err := keyfunc.ParsePrefixes(trusted...)
	if err != nil {
		panic(err)
	}
	resolve, err := keyfunc.XFF(nets)
	if err != nil {
		panic(err)
	}
	key, err := keyfunc.IP(keyfunc.IPConfig{Resolver: resolve})
	if err != nil {
		panic(err)
	}
	return LimitBy(store, limit, key, opts...)
}

// LimitAll returns middleware limiting all requests together to limit, on
// store ([keyfunc.Global]). Its bucket is its own (see [LimitBy]): two
// LimitAll one-liners are two limits, not one.
func LimitAll(store sluice.Store, limit sluice.Limit, opts ...Option) func(http.Handler) http.Handler {
	return LimitBy(store, limit, keyfunc.Global(), opts...)
}

// WithName names the rule of a one-liner ([LimitBy], [LimitByIP],
// [LimitByRealIP], [LimitAll]) instead of the name it gets by the order it
// is made in (see [LimitBy]): name shows in the headers, problem details,
// metrics and logs, and is part of the bucket keys, so one-liners given
// the same name and keyed by the same kind share buckets, in one process
// or across instances. name must be non-empty printable ASCII. Given to
// [New] or [Limit], whose rule sets name their own rules, it is an error.
func WithName(name string) Option {
	return decide.Setting(func(c *config) error {
		c.oneLiner, c.named = name, true
		return nil
	})
}

// errNamedRuleSet is the error of WithName given to New or Limit.
func errNamedRuleSet(name string) error {
	return fmt.Errorf("%w: middleware: WithName(%q) names a one-liner's rule (LimitBy, LimitByIP, LimitByRealIP, LimitAll); a rule set names its own rules", sluice.ErrInvalidConfig, name)
}

// oneLiners counts the unnamed one-liners made in the process, by kind.
var oneLiners sequence

type sequence struct {
	mu   sync.Mutex
	made map[string]int
}

// next returns the name of the next unnamed one-liner of kind: kind for
// the first, then kind-2, kind-3, ...
func (s *sequence) next(kind string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.made == nil {
		s.made = make(map[string]int)
	}
	s.made[kind]++
	if n := s.made[kind]; n > 1 {
		return kind + "-" + strconv.Itoa(n)
	}
	return kind
}
