package sluicegrpc_test

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"slices"
	"testing"

	sluicegrpc "github.com/sluicehq/sluice/grpc"
	"github.com/sluicehq/sluice/keyfunc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
)

// TestNewRequest: a call is presented as a POST of its full method, with
// its metadata as headers, its peer as RemoteAddr, its TLS state and its
// context.
func TestNewRequest(t *testing.T) {
	type ctxKey struct{}
	ctx := context.WithValue(context.Background(), ctxKey{}, "alice")
	ctx = metadata.NewIncomingContext(ctx, metadata.Pairs(
		":authority", "api.example.com",
		"x-api-key", "k1",
		"x-forwarded-for", "198.51.100.1", "x-forwarded-for", "198.51.100.2",
		"trace-bin", "\x00\x01",
	))
	ctx = peer.NewContext(ctx, &peer.Peer{
		Addr:     &net.TCPAddr{IP: net.ParseIP("2001:db8::7"), Port: 5000},
		AuthInfo: credentials.TLSInfo{State: tls.ConnectionState{ServerName: "api.example.com"}},
	})
	r := sluicegrpc.NewRequest(ctx, "/pkg.Service/Method")

	tests := []struct {
		name      string
		got, want any
	}{
		{"method", r.Method, http.MethodPost},
		{"path", r.URL.Path, "/pkg.Service/Method"},
		{"request URI", r.RequestURI, "/pkg.Service/Method"},
		{"pattern", r.Pattern, "/pkg.Service/Method"},
		{"host", r.Host, "api.example.com"},
		{"remote address", r.RemoteAddr, "[2001:db8::7]:5000"},
		{"API key header", r.Header.Get("X-Api-Key"), "k1"},
		{"forwarded, in order", slices.Equal(r.Header.Values("X-Forwarded-For"), []string{"198.51.100.1", "198.51.100.2"}), true},
		{"binary metadata, decoded", r.Header.Get("Trace-Bin"), "\x00\x01"},
		{"no pseudo-header", len(r.Header.Values(":authority")), 0},
		{"TLS", r.TLS != nil && r.TLS.ServerName == "api.example.com", true},
		{"context", r.Context().Value(ctxKey{}), "alice"},
		{"no body", r.Body, http.NoBody},
		{"endpoint key", identity(t, keyfunc.Endpoint(), r), "POST /pkg.Service/Method"},
		{"IP key, by /64", identity(t, keyfunc.ClientIP(), r), "2001:db8::"},
		{"API key", identity(t, keyfunc.APIKey("X-API-Key"), r), "k1"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, tt.got, tt.want)
		}
	}

	bare := sluicegrpc.NewRequest(context.Background(), "/pkg.Service/Method")
	if bare.RemoteAddr != "" || len(bare.Header) != 0 || bare.TLS != nil {
		t.Errorf("a context without metadata or peer: %+v", bare)
	}
}

func identity(t *testing.T, k keyfunc.Key, r *http.Request) string {
	t.Helper()
	id, err := k.Identity(r)
	if err != nil {
		t.Fatalf("%s key: %v", k.Kind(), err)
	}
	return id
}
