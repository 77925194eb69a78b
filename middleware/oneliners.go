package middleware

import (
	"net/http"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/rules"
)

// LimitBy returns middleware limiting the requests of each identity key
// gives to limit, on store: one rule, named after the key's kind (such as
// "api_key"), with every default of [rules.Rule] (a token bucket, on_fail
// local). A request without the identity is not counted (see
// [keyfunc.Key.Required]). It is [Limit] with a one-rule set, for the
// cases httprate's one-liners cover; several rules, matches, shadow rules
// and rule files need [rules.Set]. It panics if limit is invalid or an
// option is: for configurations fixed in code.
func LimitBy(store sluice.Store, limit sluice.Limit, key keyfunc.Key, opts ...Option) func(http.Handler) http.Handler {
	set := rules.MustNew(rules.Rule{Name: key.Kind(), Key: key, Limit: limit})
	return Limit(store, set, opts...)
}

// LimitByIP returns middleware limiting each client address to limit, on
// store: the TCP peer, IPv6 grouped by /64 ([keyfunc.ClientIP]). Behind a
// proxy every request has the proxy's address: use [LimitByRealIP].
func LimitByIP(store sluice.Store, limit sluice.Limit, opts ...Option) func(http.Handler) http.Handler {
	return LimitBy(store, limit, keyfunc.ClientIP(), opts...)
}

// LimitByRealIP returns middleware limiting each client address to limit,
// on store, behind proxies: trusted are the proxies' networks (CIDRs such
// as "10.0.0.0/8"), and the client is the rightmost address of
// X-Forwarded-For that is not one of them ([keyfunc.XFF]); a request from
// anywhere else is keyed by its TCP peer. Unlike httprate.LimitByRealIP it
// never believes a header sent by the client itself. It panics on an
// invalid CIDR: for configurations fixed in code (with CIDRs read at run
// time, build the key with [keyfunc.ParsePrefixes], [keyfunc.XFF] and
// [keyfunc.IP], and call [LimitBy]).
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
// store ([keyfunc.Global]).
func LimitAll(store sluice.Store, limit sluice.Limit, opts ...Option) func(http.Handler) http.Handler {
	return LimitBy(store, limit, keyfunc.Global(), opts...)
}
