package redisstore

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/sluicehq/sluice"
)

// heal reports that the take script found key holding something that is
// not a bucket's state (a key of another type, or a value or log entry that
// does not parse) and replaced it with an empty bucket: once to Events, if
// it counts such keys, and once to the log. The key is logged as it is in
// Redis, which names no identity.
func (s *Store) heal(key string) {
	if e, ok := s.events.(sluice.StateHealedEvents); ok {
		e.StateHealed(s.endpoint)
	}
	s.log.LogAttrs(context.Background(), slog.LevelWarn,
		"redisstore: a bucket key held something that is not a bucket's state; it was replaced by an empty bucket",
		slog.String("key", key), slog.String("endpoint", s.endpoint))
}

// badReply reports a script reply of the wrong shape for op. The script
// ran, so the outcome is ambiguous.
func badReply(op string, reply any) error {
	return &sluice.StoreError{Op: "redisstore: " + op, Kind: sluice.ErrUnavailable, Ambiguous: true,
		Err: fmt.Errorf("unexpected script reply %T", reply)}
}
