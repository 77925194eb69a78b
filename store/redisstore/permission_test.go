package redisstore

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/store/redisstore/internal/conn"
)

// reply is an error reply from Redis, as go-redis reports one.
type reply string

func (r reply) Error() string { return string(r) }
func (reply) RedisError()     {}

// Every form in which Redis 6.0 to 8 refuses a command to an ACL user, or
// a client's credentials, is a configuration error naming what to grant,
// which no breaker counts; a refusal from inside a script is ambiguous.
func TestPermissionRepliesAreConfigurationErrors(t *testing.T) {
	for _, tc := range []struct {
		msg       string
		names     string // in the error's message
		ambiguous bool
	}{
		{"NOPERM this user has no permissions to run the 'evalsha' command", "+evalsha", false},
		{"NOPERM User sluice has no permissions to run the 'evalsha' command", "+evalsha", false},
		{"NOPERM this user has no permissions to run the 'script|load' command", "+script|load", false},
		{"NOPERM this user has no permissions to access one of the keys used as arguments", "~sl:*", false},
		{"ERR The user executing the script can't run this command or subcommand script: 4e6d, on @user_script:52.", "+time +get", true},
		{"ERR user_script:1: ERR The user executing the script can't run this command or subcommand script: 4e6d, on @user_script:1.", "+zrangebyscore", true},
		{"ERR The user executing the script can't access at least one of the keys mentioned in the command script: 4e6d, on @user_script:72.", "~sl:*", true},
		{"ERR ACL failure in script: User sluice has no permissions to run the 'time' command script: 4e6d, on @user_script:52.", "+time", true},
		{"ERR ACL failure in script: User sluice has no permissions to access the 'sl:{x}:tb1' key script: 4e6d, on @user_script:72.", "~sl:*", true},
		{"ERR Error running script (call to f_4e6d): @user_script:52: @user_script: 52: The user executing the script can't run this command or subcommand", "+pexpire", true},
		{"WRONGPASS invalid username-password pair or user is disabled.", "username and password", false},
		{"NOAUTH Authentication required.", "username and password", false},
	} {
		t.Run(tc.msg, func(t *testing.T) {
			err := classify("redisstore: take", fmt.Errorf("failed to authenticate: %w", reply(tc.msg)))
			var se *sluice.StoreError
			if !errors.As(err, &se) || !errors.Is(err, ErrNoPermission) || !errors.Is(err, sluice.ErrInvalidConfig) {
				t.Fatalf("err = %v, want a StoreError wrapping ErrNoPermission and sluice.ErrInvalidConfig", err)
			}
			if se.Kind != sluice.ErrInvalidConfig || se.Ambiguous != tc.ambiguous {
				t.Fatalf("kind %v, ambiguous %v; want %v, %v", se.Kind, se.Ambiguous, sluice.ErrInvalidConfig, tc.ambiguous)
			}
			if !strings.Contains(err.Error(), tc.names) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("err = %v, want it to name %q and keep the reply", err, tc.names)
			}
			if countsAsFailure(err) {
				t.Fatal("the breaker counts a permission error")
			}
		})
	}
	// A ready connection whose set-up Redis refused (a PING the user may
	// not send) is reported as the refusal, not as an empty pool.
	err := classify("redisstore: take", fmt.Errorf("%w: %w", conn.ErrNoConn, reply("NOPERM this user has no permissions to run the 'ping' command")))
	if !errors.Is(err, ErrNoPermission) || !strings.Contains(err.Error(), "+ping") {
		t.Fatalf("err = %v, want ErrNoPermission naming +ping", err)
	}
	for _, msg := range []string{"ERR unknown command 'FOO'", "OOM command not allowed when used memory > 'maxmemory'.", "READONLY You can't write against a read only replica."} {
		if err := classify("redisstore: take", reply(msg)); errors.Is(err, ErrNoPermission) {
			t.Errorf("%q read as a permission error: %v", msg, err)
		}
	}
}
