package main

import (
	"net/http"
	"strconv"
	"time"
)

// maxSlow bounds the delay /slow may be asked for.
const maxSlow = 10 * time.Second

// slow stands in for an endpoint backed by a slow upstream: it sends its
// status and headers at once, then its body after ?ms= milliseconds
// (default 1000, at most 10000), or stops when the client goes away. Stop
// the gateway while a request to it is in flight to see it finish.
func slow(w http.ResponseWriter, r *http.Request) {
	d := time.Second
	if ms, err := strconv.Atoi(r.URL.Query().Get("ms")); err == nil && ms >= 0 {
		d = min(time.Duration(ms)*time.Millisecond, maxSlow)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	http.NewResponseController(w).Flush()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		reply(map[string]string{"slow": d.String()})(w, r)
	case <-r.Context().Done():
	}
}
