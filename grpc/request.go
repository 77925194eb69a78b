package sluicegrpc

import (
	"context"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"

	"github.com/sluicehq/sluice/keyfunc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
)

// NewRequest presents the gRPC call of fullMethod ("/package.Service/Method")
// whose server context is ctx as the *http.Request the rules and key
// functions read, so that every [keyfunc.Key] and rule match works on gRPC
// calls unchanged:
//
//   - Method is POST (as on the wire); URL.Path, RequestURI and Pattern
//     are fullMethod, so [keyfunc.Endpoint] keys the call by its method
//     ("POST /package.Service/Method") and a rule file's match.routes
//     lists full method names;
//   - Header holds the call's incoming metadata under canonical names
//     ("x-api-key" becomes "X-Api-Key"), so [keyfunc.APIKey],
//     [keyfunc.Header] and [keyfunc.XFF] read metadata; Host is the
//     :authority. Binary ("-bin") values are the decoded bytes;
//   - RemoteAddr is the peer address ("203.0.113.7:51234"), so
//     [keyfunc.ClientIP] and [keyfunc.IP] key the call by its peer, and
//     forwarded metadata is trusted only from the proxies configured, as
//     for HTTP; a peer without an IP address (a Unix socket, an in-memory
//     listener) has no IP key, which fails the call rather than share a
//     bucket;
//   - TLS is the connection's state on a TLS connection;
//   - the context is ctx, so [keyfunc.User] finds the identity an
//     authentication interceptor put there, and key functions of your own
//     can read grpc.Method, metadata.FromIncomingContext and
//     peer.FromContext from r.Context().
//
// The request has no body. It is what the interceptors resolve rules
// against; call it to test keys and rules against a call's context.
func NewRequest(ctx context.Context, fullMethod string) *http.Request {
	return newRequest(ctx, fullMethod, fullMethod)
}

// newRequest is NewRequest with the pattern to key the call by.
func newRequest(ctx context.Context, fullMethod, pattern string) *http.Request {
	r := &http.Request{
		Method:     http.MethodPost,
		URL:        &url.URL{Path: fullMethod},
		RequestURI: fullMethod,
		Proto:      "HTTP/2.0",
		ProtoMajor: 2,
		Header:     http.Header{},
		Body:       http.NoBody,
		Pattern:    pattern,
	}
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		for k, vs := range md {
			if k == ":authority" && len(vs) > 0 {
				r.Host = vs[0]
				continue
			}
			if strings.HasPrefix(k, ":") {
				continue // other pseudo-headers are no metadata
			}
			ck := textproto.CanonicalMIMEHeaderKey(k)
			r.Header[ck] = append(r.Header[ck], vs...)
		}
	}
	if p, ok := peer.FromContext(ctx); ok {
		if p.Addr != nil {
			r.RemoteAddr = p.Addr.String()
		}
		if info, ok := p.AuthInfo.(credentials.TLSInfo); ok {
			state := info.State
			r.TLS = &state
		}
	}
	return r.WithContext(ctx)
}

// pattern returns the route pattern a call of fullMethod is keyed by.
func (l *Limiter) pattern(fullMethod string) string {
	if l.cfg.known != nil && !l.cfg.known(fullMethod) {
		return keyfunc.Unmatched
	}
	return fullMethod
}
