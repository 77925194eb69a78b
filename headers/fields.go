package headers

import "net/http"

// maxFields is the most fields one Write sets: IETF's two, draft-06's
// three besides RateLimit-Policy, and X-RateLimit's three.
const maxFields = 8

// fields records where each value ends in the one buffer a Write builds
// every value in, so a call allocates one string and one slice whatever
// the mode. The buffer itself stays a local of Write, on the stack.
type fields struct {
	keys [maxFields]string
	ends [maxFields]int
	n    int
}

// end records that key's value is the buffer from the previous value's end
// (or the start) up to offset end.
func (f *fields) end(key string, end int) {
	f.keys[f.n] = key
	f.ends[f.n] = end
	f.n++
}

// set sets the fields, whose values buf holds, in h. The keys are already
// canonical, so assigning them is what [http.Header.Set] does, minus one
// allocation per field. Each value gets a slice of capacity 1, so a later
// Add to one field cannot overwrite another.
func (f *fields) set(h http.Header, buf []byte) {
	s := string(buf)
	vals := make([]string, f.n)
	start := 0
	for i := range f.n {
		vals[i] = s[start:f.ends[i]]
		start = f.ends[i]
		h[f.keys[i]] = vals[i : i+1 : i+1]
	}
}
