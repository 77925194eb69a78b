package main

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/redistest/redisstoretest"
	"github.com/sluicehq/sluice/store/memstore"
)

// /readyz is 200 with the Redis store's health once it can decide, and
// always 200 for the in-memory store.
func TestReadiness(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for name, h := range map[string]http.Handler{
		"redis":    readiness(redisstoretest.New(t), log),
		"memstore": readiness(memstore.New(memstore.Config{}), log),
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		body, _ := io.ReadAll(rec.Body)
		if rec.Code != http.StatusOK || !strings.Contains(string(body), `"ready":true`) {
			t.Errorf("%s: %d %s", name, rec.Code, body)
		}
	}
}
