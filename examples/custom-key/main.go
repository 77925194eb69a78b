// Command custom-key shows rate limits keyed by custom key functions: a
// tenant taken from the request's subdomain and validated, the tenant
// joined with the client IP, and the tenant joined with the route.
//
//	go run ./examples/custom-key              # listens on :8080
//	go run ./examples/custom-key -addr :9090
//
// Then, from another terminal (curl resolves *.localhost to the loopback
// address; otherwise send the Host header yourself):
//
//	curl -i http://acme.localhost:8080/hello
//	curl -i -H 'Host: globex.localhost' localhost:8080/hello
//	curl -i http://unknown.localhost:8080/hello   # 400: no such tenant
//	for i in $(seq 4); do curl -s -o /dev/null -w '%{http_code} ' -X POST http://acme.localhost:8080/reports/export; done; echo
//
// The rules:
//
//	per-tenant       100 a minute per tenant, on every route
//	per-tenant-ip    20 a minute per tenant and client IP, on every route
//	report           3 a minute per tenant and report route (POST /reports/...)
//
// Report requests pass through both limiters, one after the other, so they
// count against per-tenant and per-tenant-ip as well; one the report rule
// refuses has already been counted by the first limiter. Rules in one
// limiter, by contrast, are decided together: a refused request consumes
// nothing from any of them.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/middleware"
	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/store/memstore"
)

func main() {
	addr := flag.String("addr", ":8080", "listen address")
	flag.Parse()

	store := memstore.New(memstore.Config{})
	defer store.Close(context.Background())

	router, err := newRouter(store)
	if err != nil {
		fmt.Fprintln(os.Stderr, "custom-key:", err)
		os.Exit(1)
	}
	srv := &http.Server{Addr: *addr, Handler: router, ReadHeaderTimeout: 5 * time.Second}
	slog.Info("custom-key example listening", "addr", *addr)
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(os.Stderr, "custom-key:", err)
		os.Exit(1)
	}
}

// tenants are the tenants this service knows. A real service would ask its
// tenant directory; a map keeps the example self-contained.
var tenants = map[string]bool{"acme": true, "globex": true}

// errNoTenant is what tenantKey fails with. It wraps keyfunc.ErrNoKey, so
// the limiter answers 400 Bad Request instead of counting the request in
// some shared bucket. Its message never repeats what the client sent.
var errNoTenant = fmt.Errorf("%w: no known tenant in the Host header", keyfunc.ErrNoKey)

// tenantKey is a custom keyfunc.KeyFunc: the tenant is the first label of
// the host name, as in acme.example.com. Rules use it as
// keyfunc.New("tenant", tenantKey), whose kind "tenant" names it in the
// bucket keys.
//
// The Host header is chosen by the client, so the key is validated: host
// names are case-insensitive and may end in a dot, so ACME.example.com. is
// folded to "acme" rather than opening a fresh bucket per spelling, and
// only known tenants are accepted, so a client cannot escape its limits by
// inventing tenants.
func tenantKey(r *http.Request) (string, error) {
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	label, _, found := strings.Cut(host, ".")
	if !found || !tenants[label] {
		return "", errNoTenant
	}
	return label, nil
}

// newRouter returns the example's routes, limited on store.
func newRouter(store sluice.Store) (http.Handler, error) {
	tenant := keyfunc.New("tenant", tenantKey)
	// keyfunc.Endpoint reads the route pattern chi sets after routing,
	// where the report limiter runs (a Group's middleware).
	perTenantReport := keyfunc.Join(tenant, keyfunc.Endpoint())

	everywhere, err := rules.New(
		rules.Rule{Name: "per-tenant", Key: tenant, Limit: sluice.PerMinute(100)},
		rules.Rule{Name: "per-tenant-ip", Key: keyfunc.Join(tenant, keyfunc.ClientIP()), Limit: sluice.PerMinute(20)},
	)
	if err != nil {
		return nil, err
	}
	reports, err := rules.New(
		rules.Rule{Name: "report", Key: perTenantReport, Limit: sluice.PerMinute(3)},
	)
	if err != nil {
		return nil, err
	}
	limitEverywhere, err := middleware.New(store, everywhere)
	if err != nil {
		return nil, err
	}
	limitReports, err := middleware.New(store, reports)
	if err != nil {
		return nil, err
	}

	r := chi.NewRouter()
	r.Use(limitEverywhere.Handler)
	r.Get("/hello", func(w http.ResponseWriter, r *http.Request) {
		tenant, _ := tenantKey(r) // the limiter has accepted it
		reply(w, map[string]string{"tenant": tenant})
	})
	r.Group(func(g chi.Router) {
		// Group middleware runs only for the group's routes, after
		// routing: the path is one of the static paths below.
		g.Use(limitReports.Handler)
		g.Post("/reports/export", func(w http.ResponseWriter, _ *http.Request) {
			reply(w, map[string]string{"report": "export", "status": "queued"})
		})
		g.Post("/reports/rebuild", func(w http.ResponseWriter, _ *http.Request) {
			reply(w, map[string]string{"report": "rebuild", "status": "queued"})
		})
	})
	return r, nil
}

// reply answers v as JSON.
func reply(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
