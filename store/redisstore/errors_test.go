package redisstore

import (
	"errors"
	"testing"

	"github.com/sluicehq/sluice"
)

func TestClassifyReply(t *testing.T) {
	for _, tc := range []struct {
		msg  string
		want error
	}{
		{"WRONGTYPE Operation against a key holding the wrong kind of value script: 4e6d, on @user_script:63.", sluice.ErrCorruptState},
		{"ERR Error running script (call to f_4e6d): @user_script:63: WRONGTYPE Operation against a key holding the wrong kind of value", sluice.ErrCorruptState},
		{"SLUICECORRUPT key 2 does not hold a sluice state", sluice.ErrCorruptState},
		{"NOSCRIPT No matching script. Please use EVAL.", sluice.ErrScriptMissing},
		{"CLUSTERDOWN The cluster is down", sluice.ErrClusterDown},
		{"ERR Error running script (call to f_4e6d): @user_script:9: CLUSTERDOWN The cluster is down", sluice.ErrClusterDown},
		{"ERR Error running script (call to f_4e6d): @user_script:9: user_script:9: attempt to compare nil with number", sluice.ErrUnavailable},
		{"ERR unknown command", sluice.ErrUnavailable},
		{"OOM command not allowed when used memory > 'maxmemory'.", sluice.ErrUnavailable},
	} {
		if got := classifyReply(tc.msg); !errors.Is(got, tc.want) {
			t.Errorf("classifyReply(%q) = %v, want %v", tc.msg, got, tc.want)
		}
	}
}
