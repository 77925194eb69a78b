package headers

// maxFields is the most fields one AppendFields appends: IETF's two,
// draft-06's three besides RateLimit-Policy, and X-RateLimit's three.
const maxFields = 8

// fields records where each value ends in the one buffer AppendFields
// builds every value in, so a call allocates one string whatever the mode.
// The buffer itself stays a local of AppendFields, on the stack.
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

// appendTo appends the fields, whose values buf holds, to dst: one string
// for all the values.
func (f *fields) appendTo(dst []Field, buf []byte) []Field {
	s := string(buf)
	start := 0
	for i := range f.n {
		dst = append(dst, Field{Name: f.keys[i], Value: s[start:f.ends[i]]})
		start = f.ends[i]
	}
	return dst
}
