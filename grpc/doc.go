// Package sluicegrpc rate-limits gRPC servers with sluice's rules and
// stores, the same [rules.Set] and [sluice.Store] as the HTTP middleware:
// one set of rules, one store, the same buckets behind HTTP and gRPC.
//
//	import sluicegrpc "github.com/sluicehq/sluice/grpc"
//
//	l, err := sluicegrpc.New(store, set)
//	if err != nil { ... }
//	srv := grpc.NewServer(
//		grpc.ChainUnaryInterceptor(auth, l.UnaryServerInterceptor()),
//		grpc.ChainStreamInterceptor(l.StreamServerInterceptor()),
//	)
//
// Install the limiter after the interceptors that authenticate, so that a
// rule keyed by user finds the identity they put in the context.
//
// # Calls as requests
//
// Rules and key functions read an *http.Request. The interceptors present
// each call as one ([NewRequest]): method POST, path and route pattern the
// full method name ("/package.Service/Method"), headers the incoming
// metadata, RemoteAddr the peer address, and the call's context. So every
// key of the keyfunc package works unchanged:
//
//   - keyfunc.ClientIP and keyfunc.IP key by the peer address, IPv6
//     grouped by /64; forwarded metadata (x-forwarded-for, or an edge's
//     single header) is trusted only from the proxies named with
//     keyfunc.XFF or keyfunc.TrustedHeader, exactly as for HTTP;
//   - keyfunc.APIKey("x-api-key") and keyfunc.Header read metadata;
//   - keyfunc.User reads the authenticated identity from the context;
//   - keyfunc.Endpoint keys by the full method name, "POST
//     /package.Service/Method", and a rule file's match.routes lists full
//     method names (match.methods: [POST] matches every call).
//
// A rule file's key: ip, api_key, user, endpoint and user_endpoint work
// the same way. A call that cannot be keyed (a required identity missing,
// a peer without an IP address for an IP rule) is never counted in a
// shared bucket: it fails with codes.InvalidArgument ([ErrorStatus]).
//
// # Answers
//
// Each call is decided once, before its handler runs, all of its rules in
// one store call under a latency budget ([decide.WithBudget]):
//
//   - admitted: the handler runs; the response header metadata carries the
//     rate-limit fields the HTTP middleware sends as headers, under the
//     same names in lower case ("ratelimit-policy" and "ratelimit" by
//     default; see [decide.WithHeaders]);
//   - refused by a rule: codes.ResourceExhausted with a google.rpc.RetryInfo
//     detail carrying the exact retry delay, and a google.rpc.QuotaFailure
//     naming the rules ([DenialStatus]); the header metadata also carries
//     "retry-after" (whole seconds, rounded up) and the rate-limit fields,
//     and the trailer carries grpc-retry-pushback-ms, which gRPC's own
//     retries honour (see [WithoutPushback]);
//   - the store failed: each rule applies its on_fail policy, as in the
//     HTTP middleware. local (the default) decides in process on the
//     rule's share of its limit; open lets the call through; closed ends
//     it with codes.Unavailable and a RetryInfo (the store's expected
//     outage, at least a second). The store's error never reaches the
//     client.
//
// The decision is the [decide] package's, as in the HTTP middleware: the
// interceptors turn its outcome into a status, details and metadata, and
// take its options ([decide.WithBudget], [decide.WithLogger], ...) beside
// their own. Every decision is reported to the observer
// ([decide.WithObserver], or the store's own), so the Prometheus and
// OpenTelemetry collectors count gRPC calls as they count HTTP requests.
//
// # Streams, message by message
//
// The stream interceptor decides a streaming call when it opens. With
// [WithMessageRules], each message the stream then receives is decided
// too, by a rule set of its own, all of its rules in one store call
// through the same pipeline: a message over the limit ends the stream with
// ResourceExhausted and its RetryInfo, and the trailer carries retry-after,
// the rate-limit fields and grpc-retry-pushback-ms. The open is still
// decided by the limiter's rules, so a client cannot hold idle streams
// without limit; leave the streaming methods out of those rules to limit
// their messages only.
//
// # Before decoding: the tap handle
//
// The interceptors run after gRPC has read and decoded the call's message.
// [Limiter.TapHandle] returns a handle for grpc.InTapHandle that decides
// the call (unary, or a stream's open) when its headers arrive, before
// anything is read or decoded. It runs on the connection's reader, where
// no store call may wait, so it decides only in process: with memstore, or
// with a lease store's local tokens and remembered refusals, leaving the
// rest to the interceptors (install both). It sees the method, the
// metadata and the peer, never what interceptors add: rules keyed by ip,
// api_key, header, endpoint and global work; a set with a rule keyed by
// user is refused ([ErrTapKey]), as is a store that cannot decide in
// process ([ErrNotInProcess]). gRPC sends a tap handle's status error and
// nothing else: its refusal carries RetryInfo and QuotaFailure, but no
// metadata (no retry-after, rate-limit fields or pushback trailer).
//
// # Clients
//
// [UnaryClientInterceptor] waits out refusals that carry a retry delay
// and sends the call again, bounded by a number of retries, a total wait
// and the call's deadline. [StreamClientInterceptor] does the same for
// streaming calls refused before they received anything, sending again
// what the client had sent. [RetryDelay] and [Violations] read the
// details of a refusal, for callers that decide themselves.
package sluicegrpc
