package envoy

import (
	"context"
	"encoding/json"
	"net/http"
	"time"
)

// readier is a store that can say whether it can decide, such as the
// Redis store.
type readier interface {
	Ready(ctx context.Context) error
}

// Ready reports whether the service can decide with its store, waiting at
// most for ctx: nil, or why not. A store that cannot say (the memory
// store) is always ready. A service whose store is not ready still answers
// Envoy, through each rule's on_fail.
func (s *Service) Ready(ctx context.Context) error {
	if r, ok := s.store.(readier); ok {
		return r.Ready(ctx)
	}
	return nil
}

// health is what HealthHandler serves.
type health struct {
	Ready   bool     `json:"ready"`
	Reason  string   `json:"reason,omitempty"`
	Domains []string `json:"domains"`
}

// HealthHandler serves the service's readiness as JSON, with 200 when
// [Service.Ready] and 503 when not, waiting at most a second: a readiness
// probe. For liveness, anything that answers will do: a service whose
// store fails still limits, and a restart would mend nothing.
func (s *Service) HealthHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), time.Second)
		defer cancel()
		h := health{Ready: true, Domains: s.Mapping().Domains()}
		if err := s.Ready(ctx); err != nil {
			h.Ready, h.Reason = false, err.Error()
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		if !h.Ready {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_ = json.NewEncoder(w).Encode(h)
	})
}
