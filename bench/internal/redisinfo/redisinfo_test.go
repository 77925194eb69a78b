package redisinfo

import "testing"

func TestParseInfo(t *testing.T) {
	info := ParseInfo("# CPU\r\nused_cpu_sys:1.5\r\nused_cpu_user:2.25\r\n\r\n# Commandstats\r\n" +
		"cmdstat_evalsha:calls=10,usec=100,usec_per_call=10.00,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_get:calls=7,usec=7,usec_per_call=1.00,rejected_calls=0,failed_calls=0\r\n")
	if got := CPUSeconds(info); got != 3.75 {
		t.Errorf("cpu %v", got)
	}
	calls := CommandCalls(info)
	if calls["evalsha"] != 10 || calls["get"] != 7 || len(calls) != 2 {
		t.Errorf("calls %v", calls)
	}
}
