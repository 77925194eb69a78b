package chikey

import (
	"fmt"
	"net/http"
	"net/netip"

	"github.com/go-chi/chi/v5/middleware"

	"github.com/sluicehq/sluice/internal/ident"
	"github.com/sluicehq/sluice/keyfunc"
)

// ClientIPAddr is a keyfunc.IPResolver that reads the client address stored
// by one of chi's ClientIPFrom* middlewares (ClientIPFromRemoteAddr,
// ClientIPFromXFF, ClientIPFromHeader, ClientIPFromXFFTrustedProxies) with
// middleware.GetClientIPAddr, normalised as keyfunc's resolvers normalise
// addresses (an IPv4-mapped IPv6 address becomes IPv4, a zone is dropped). Install
// that middleware before the limiter:
//
//	r.Use(middleware.ClientIPFromXFF("10.0.0.0/8"))
//	r.Use(limiter) // keyed with chikey.ClientIP()
//
// When no address is stored (the middleware is missing, or failed closed on
// a malformed or missing header) it returns an error wrapping
// keyfunc.ErrNoKey. The trust decisions are chi's: read the documentation
// of the middleware you choose. keyfunc's own resolvers ([keyfunc.XFF],
// [keyfunc.TrustedHeader]) need no extra middleware.
func ClientIPAddr(r *http.Request) (netip.Addr, error) {
	a := middleware.GetClientIPAddr(r.Context())
	if !a.IsValid() {
		return netip.Addr{}, errNoChiIP
	}
	return ident.Normalize(a), nil
}

var errNoChiIP = keyfuncError("no client IP in the request context: install a chi middleware.ClientIPFrom* before the limiter")

// ClientIP returns the Key, of kind "ip", keyed on the address [ClientIPAddr] reads,
// IPv6 grouped by /64. For another grouping use
// keyfunc.IP(keyfunc.IPConfig{Resolver: chikey.ClientIPAddr, IPv6Prefix: n}).
func ClientIP() keyfunc.Key {
	k, err := keyfunc.IP(keyfunc.IPConfig{Resolver: ClientIPAddr})
	if err != nil {
		panic(err) // cannot happen: the default IPv6 grouping is valid
	}
	return k
}

// keyfuncError returns an error wrapping keyfunc.ErrNoKey with the same
// message format keyfunc uses.
func keyfuncError(msg string) error {
	return fmt.Errorf("%w: %s", keyfunc.ErrNoKey, msg)
}
