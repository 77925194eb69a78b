package main

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// The HTTP server's limits: a client that sends its headers or body too
// slowly, keeps an idle connection open, or sends huge headers cannot hold
// the gateway's resources for long.
const (
	// readHeaderTimeout bounds the time to read a request's headers.
	readHeaderTimeout = 5 * time.Second
	// readTimeout bounds the time to read a whole request, body included.
	readTimeout = 30 * time.Second
	// writeTimeout bounds the time from the end of a request's headers
	// to the end of its response: it must outlast the slowest handler
	// (/slow's maxSlow) so that a slow request completes, also while a
	// shutdown waits for it, and stays below shutdownTimeout.
	writeTimeout = maxSlow + 10*time.Second
	// idleTimeout bounds how long a keep-alive connection waits for its
	// next request.
	idleTimeout = 120 * time.Second
	// maxHeaderBytes bounds a request's headers; more is answered 431.
	maxHeaderBytes = 64 << 10
	// shutdownTimeout bounds how long requests in flight at SIGTERM may
	// take to finish before their connections are closed.
	shutdownTimeout = 25 * time.Second
)

// newHTTPServer returns the gateway's server for h, with its limits.
func newHTTPServer(h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

// serve serves srv on ln until ctx is done, then shuts down gracefully:
// it stops accepting (the listener closes), lets the requests in flight
// finish (for up to shutdownTimeout, after which their connections are
// closed), and only then returns, so that the caller can close the store
// those requests were using.
func serve(ctx context.Context, srv *http.Server, ln net.Listener, log *slog.Logger) error {
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc: // the listener failed
		return err
	case <-ctx.Done():
	}
	log.Info("gateway shutting down: no new connections; finishing requests in flight", "timeout", shutdownTimeout)
	shutdown, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	err := srv.Shutdown(shutdown)
	if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	if err != nil {
		srv.Close()
		return err
	}
	return nil
}
