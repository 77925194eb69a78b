package etcd

import "strconv"

// Origin says where the rules a [Watcher] has in force came from: etcd's
// document, the last good snapshot ([WithSnapshot]) or the fallback rules
// given in code ([WithFallback]). [Watcher.Origin] returns it; the
// sluice_etcd_rules_origin gauge ([WithRegisterer]) and the log line of
// each start and each switch say it too.
type Origin uint8

const (
	// OriginEtcd: the rules of the document in etcd, checked in full.
	OriginEtcd Origin = iota
	// OriginSnapshot: the rules of the last good snapshot, read at start
	// because etcd had no good document or did not answer.
	OriginSnapshot
	// OriginFallback: the fallback rules, used at start when neither etcd
	// nor the snapshot had good rules.
	OriginFallback
)

var originNames = [...]string{OriginEtcd: "etcd", OriginSnapshot: "snapshot", OriginFallback: "fallback"}

// String returns "etcd", "snapshot" or "fallback", the value of the
// metrics' origin label and of the logs' origin attribute.
func (o Origin) String() string {
	if int(o) < len(originNames) {
		return originNames[o]
	}
	return "Origin(" + strconv.Itoa(int(o)) + ")"
}
