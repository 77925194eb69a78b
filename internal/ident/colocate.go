package ident

// Colocatable reports whether rules whose key kind is kind may colocate
// their buckets: not IP, endpoint or global buckets, which many identities
// share or which a whole service shares.
func Colocatable(kind string) bool {
	switch kind {
	case "ip", "endpoint", "global":
		return false
	}
	return true
}
