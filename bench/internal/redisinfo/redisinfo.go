// Package redisinfo reads the INFO replies of the private redis-server the
// load tool measures against. The server itself is started and stopped with
// github.com/sluicehq/sluice/internal/redistest.
package redisinfo

import (
	"bufio"
	"strconv"
	"strings"
)

// ParseInfo parses the text of an INFO reply into field → value.
func ParseInfo(text string) map[string]string {
	m := make(map[string]string)
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok {
			m[k] = v
		}
	}
	return m
}

// CommandCalls returns, from a parsed INFO commandstats, the calls per
// command ("evalsha" → 1234). Commands run inside scripts and transactions
// are counted too: that is Redis's own accounting.
func CommandCalls(info map[string]string) map[string]uint64 {
	out := make(map[string]uint64)
	for k, v := range info {
		name, ok := strings.CutPrefix(k, "cmdstat_")
		if !ok {
			continue
		}
		for _, f := range strings.Split(v, ",") {
			if n, ok := strings.CutPrefix(f, "calls="); ok {
				c, _ := strconv.ParseUint(n, 10, 64)
				out[name] = c
			}
		}
	}
	return out
}

// CPUSeconds returns the CPU time of the server's main thread, the one
// that runs every command and script, from a parsed INFO cpu
// (used_cpu_sys_main_thread + used_cpu_user_main_thread), or of the whole
// process (used_cpu_sys + used_cpu_user) from a server that does not
// report its main thread's.
func CPUSeconds(info map[string]string) float64 {
	sysKey, userKey := "used_cpu_sys_main_thread", "used_cpu_user_main_thread"
	if _, ok := info[sysKey]; !ok {
		sysKey, userKey = "used_cpu_sys", "used_cpu_user"
	}
	sys, _ := strconv.ParseFloat(info[sysKey], 64)
	user, _ := strconv.ParseFloat(info[userKey], 64)
	return sys + user
}
