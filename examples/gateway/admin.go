package main

import (
	"context"
	"errors"
	"github.com/sluicehq/sluice/rules"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/rules/admin"
)

// capture returns src, recording the source it gives the limiter in *out,
// so the operator API reads the same rules (and follows a rule file's
// reloads).
func capture(src rulesSource, out *rules.Source) rulesSource {
	return func(router chi.Routes) (rules.Source, error) {
		s, err := src(router)
		*out = s
		return s, err
	}
}

// serveAdmin serves the operator API (rules/admin: inspect and reset a
// client's buckets) on addr until ctx ends. An empty addr, the default,
// serves nothing. It returns the address it listens on and a function that
// shuts the server down and returns once the requests in flight have
// finished: call it before closing store, so that no /reset runs against
// a closed store. The demo has no authentication: in production mount
// admin.New behind your own, on an address only operators reach.
func serveAdmin(ctx context.Context, addr string, store sluice.Store, src rules.Source, log *slog.Logger, obs sluice.Observer) (net.Addr, func(), error) {
	if addr == "" {
		return nil, func() {}, nil
	}
	h, err := admin.New(store, src, admin.WithLogger(log), admin.WithObserver(obs))
	if err != nil {
		return nil, nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	srv := newHTTPServer(h, log) // the API server's limits (server.go)
	srv.WriteTimeout = 10 * time.Second
	ctx, cancel := context.WithCancel(ctx)
	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			log.Error("operator API stopped", "error", err)
		}
	}()
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), adminShutdownTimeout)
		defer cancel()
		if err := srv.Shutdown(shutdown); err != nil {
			log.Warn("operator API: requests still in flight at shutdown were cut off", "error", err)
			srv.Close()
		}
	}()
	log.Info("operator API listening (no authentication: keep it private)", "addr", ln.Addr().String())
	return ln.Addr(), func() {
		cancel()
		<-stopped
		<-served
	}, nil
}

// adminShutdownTimeout bounds how long operator requests in flight at
// shutdown may take to finish.
const adminShutdownTimeout = 5 * time.Second
