package middleware

import (
	"bufio"
	"net"
	"net/http"

	"github.com/sluicehq/sluice/decide"
	"github.com/sluicehq/sluice/rules"
)

// serveCounted calls next for a request that a rule counts by outcome
// ([rules.Rule.Count]), recording its response's status, and finishes o
// with it when next returns: the status it wrote, 200 if it wrote
// nothing, as net/http answers, 500 if it panicked.
func serveCounted(next http.Handler, w http.ResponseWriter, r *http.Request, o *decide.Outcome, info *requestInfo) {
	sw := &statusWriter{ResponseWriter: w}
	returned := false
	defer func() {
		status := sw.status
		switch {
		case !returned:
			status = http.StatusInternalServerError
		case status == 0:
			status = http.StatusOK
		}
		o.Finish(r.Context(), info.charged.Load(), rules.HTTPStatus(status))
	}()
	next.ServeHTTP(sw, r)
	returned = true
}

// statusWriter records the status of the response written through it. It
// passes Flush and Hijack on, and the rest through Unwrap
// ([http.ResponseController]).
type statusWriter struct {
	http.ResponseWriter
	status int // the final status written, 0 before one is
}

// WriteHeader records the final status (not an informational 1xx one
// other than 101 Switching Protocols) and writes it.
func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 && (code >= 200 || code == http.StatusSwitchingProtocols) {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

// Write writes b, after a 200 status if none was written.
func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Flush flushes the response, after a 200 status if none was written.
func (w *statusWriter) Flush() {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Hijack takes over the connection; the request then ends as 101
// Switching Protocols, as a protocol upgrade does.
func (w *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err == nil && w.status == 0 {
		w.status = http.StatusSwitchingProtocols
	}
	return c, rw, err
}

// Unwrap returns the wrapped ResponseWriter, for [http.ResponseController].
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
