package main

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/middleware"
	"github.com/sluicehq/sluice/rules/admin"
)

// capture returns src, recording the source it gives the limiter in *out,
// so the operator API reads the same rules (and follows a rule file's
// reloads).
func capture(src rulesSource, out *middleware.Source) rulesSource {
	return func(router chi.Routes) (middleware.Source, error) {
		s, err := src(router)
		*out = s
		return s, err
	}
}

// serveAdmin serves the operator API (rules/admin: inspect and reset a
// client's buckets) on addr until ctx ends. An empty addr, the default,
// serves nothing. It returns the address it listens on. The demo has no authentication: in production mount
// admin.New behind your own, on an address only operators reach.
func serveAdmin(ctx context.Context, addr string, store sluice.Store, src middleware.Source, log *slog.Logger, obs sluice.Observer) (net.Addr, error) {
	if addr == "" {
		return nil, nil
	}
	h, err := admin.New(store, src, admin.WithLogger(log), admin.WithObserver(obs))
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	srv := newHTTPServer(h, log) // the API server's limits (server.go)
	srv.WriteTimeout = 10 * time.Second
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	go func() {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			log.Error("operator API stopped", "error", err)
		}
	}()
	log.Info("operator API listening (no authentication: keep it private)", "addr", ln.Addr().String())
	return ln.Addr(), nil
}
