package redisinfo

import "testing"

func TestParseInfo(t *testing.T) {
	info := ParseInfo("# CPU\r\nused_cpu_sys:1.5\r\nused_cpu_user:2.25\r\n\r\n# Commandstats\r\n" +
		"cmdstat_evalsha:calls=10,usec=100,usec_per_call=10.00,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_get:calls=7,usec=7,usec_per_call=1.00,rejected_calls=0,failed_calls=0\r\n")
	if got := CPUSeconds(info); got != 3.75 {
		t.Errorf("cpu %v", got)
	}
	main := ParseInfo("used_cpu_sys:1.5\r\nused_cpu_user:2.25\r\nused_cpu_sys_main_thread:1\r\nused_cpu_user_main_thread:2\r\n")
	if got := CPUSeconds(main); got != 3 {
		t.Errorf("main thread cpu %v", got)
	}
	calls := CommandCalls(info)
	if calls["evalsha"] != 10 || calls["get"] != 7 || len(calls) != 2 {
		t.Errorf("calls %v", calls)
	}
}
