package keyfunc

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/internal/ident"
)

// form is how an operator writes the identity of a key.
type form struct {
	desc    string // what the text is: "an IPv4 or IPv6 address"
	example string // an identity in the form, or ""
	// fields is the number of space-separated fields the text spans inside
	// a joined key's text, or 0 for any number: the text may hold spaces.
	fields int
	read   func(text string) (string, bool) // built-in forms
	custom IdentityParser                   // set by Key.ParseWith
	parts  []Key                            // a joined key's parts
}

// String describes the form, with its example.
func (f *form) String() string {
	s := f.desc
	if f.example != "" {
		s += ", such as " + strconv.Quote(f.example)
	}
	if f.parts != nil && f.custom == nil {
		s += "; or a list of one identity per part"
	}
	return s
}

// parse reads typed as an identity of kind, whose form f is.
func (f *form) parse(kind, typed string) (string, error) {
	text := trimOWS(typed)
	switch {
	case f.custom != nil:
		return f.custom(text)
	case f.parts != nil:
		return f.parseJoined(kind, text)
	}
	id, ok := f.read(text)
	if !ok {
		return "", &FormError{Kind: kind, Form: f.String()}
	}
	return id, nil
}

// joinForm is the form of a key joining parts.
func joinForm(parts []Key) *form {
	f := &form{parts: parts}
	descs, examples := make([]string, len(parts)), make([]string, len(parts))
	free := 0
	for i, p := range parts {
		pf := p.formOf()
		descs[i], examples[i] = pf.desc, pf.example
		if pf.fields == 0 {
			free++
		}
		f.fields += pf.fields
	}
	if free > 0 {
		f.fields = 0
	}
	f.desc = "the identities of its parts in order, separated by spaces (" + strings.Join(descs, "; then ") + ")"
	if !slices.Contains(examples, "") {
		f.example = strings.Join(examples, " ")
	}
	return f
}

// listForm describes the identities of a joined key given one per part.
func (f *form) listForm() string {
	forms := make([]string, len(f.parts))
	for i, p := range f.parts {
		forms[i] = p.formOf().String()
	}
	return fmt.Sprintf("a list of %d identities, one per part, in order: %s", len(f.parts), strings.Join(forms, "; "))
}

// parseJoined reads the text of a joined key: the parts' identities in
// order, separated by spaces.
func (f *form) parseJoined(kind, text string) (string, error) {
	spans := fieldSpans(text)
	counts, ok := f.split(len(spans))
	if !ok {
		return "", &FormError{Kind: kind, Form: f.String()}
	}
	var b []byte
	next := 0
	for i, p := range f.parts {
		first, last := spans[next], spans[next+counts[i]-1]
		next += counts[i]
		id, err := p.formOf().parse(p.kind, text[first[0]:last[1]])
		if err != nil {
			if _, form := err.(*FormError); form {
				return "", &FormError{Kind: kind, Form: f.String()}
			}
			return "", fmt.Errorf("keyfunc: part #%d: %w", i+1, err)
		}
		b = appendNetstring(b, id)
	}
	return string(b), nil
}

// split returns how many of n fields each part spans, or false when the
// parts cannot span n fields, or could in more than one way.
func (f *form) split(n int) ([]int, bool) {
	fixed, free := 0, 0
	counts := make([]int, len(f.parts))
	for i, p := range f.parts {
		counts[i] = p.formOf().fields
		if counts[i] == 0 {
			free++
			counts[i] = 1
		}
		fixed += counts[i]
	}
	extra := n - fixed
	switch {
	case extra < 0, extra > 0 && free != 1:
		return nil, false
	case extra > 0:
		for i, p := range f.parts {
			if p.formOf().fields == 0 {
				counts[i] += extra
			}
		}
	}
	return counts, true
}

// fieldSpans returns the start and end of each field of s, the runs of
// characters between spaces and tabs.
func fieldSpans(s string) [][2]int {
	var spans [][2]int
	start := -1
	for i := 0; i <= len(s); i++ {
		sep := i == len(s) || s[i] == ' ' || s[i] == '\t'
		switch {
		case sep && start >= 0:
			spans = append(spans, [2]int{start, i})
			start = -1
		case !sep && start < 0:
			start = i
		}
	}
	return spans
}

// The forms of the built-in kinds.
var (
	globalForm = &form{desc: `"global", or nothing`, fields: 1, read: func(s string) (string, bool) {
		return GlobalKey, s == "" || s == GlobalKey
	}}
	endpointForm = &form{desc: "a method, a space and a route pattern", example: "GET /users/{id}", fields: 2, read: readEndpoint}
	userForm     = &form{desc: "a user id", example: "alice", read: nonEmpty}
	asIsForm     = &form{desc: "the identity the key's function returns", read: nonEmpty}
)

func ipForm(bits int) *form {
	return &form{desc: "an IPv4 or IPv6 address", example: "192.0.2.7", fields: 1, read: func(s string) (string, bool) {
		a, ok := parseAddr(s)
		if !ok {
			return "", false
		}
		return ident.IPKey(a, bits), true
	}}
}

func headerForm(canonical string) *form {
	example := strings.ToLower(strings.TrimPrefix(canonical, "X-")) + "-1" // X-Tenant: tenant-1
	return &form{desc: "the value of the " + canonical + " header", example: example, read: nonEmpty}
}

func apiKeyForm(canonical string) *form {
	desc := "an API key"
	if canonical != "" {
		desc += ", as the " + canonical + " header carries it"
	}
	return &form{desc: desc, example: "key-1234", read: nonEmpty}
}

func nonEmpty(s string) (string, bool) { return s, s != "" }

// readEndpoint reads "METHOD /pattern" into the key the endpoint keys
// give: a standard method in upper case, or as typed (a custom method a
// pattern names, or ident.OtherMethod), a space and the pattern.
func readEndpoint(s string) (string, bool) {
	i := strings.IndexAny(s, " \t")
	if i < 0 {
		return "", false
	}
	method, pattern := s[:i], trimOWS(s[i:])
	if method == "" || pattern == "" || strings.ContainsAny(pattern, " \t") ||
		pattern != Unmatched && !strings.Contains(pattern, "/") {
		return "", false
	}
	if up := strings.ToUpper(method); ident.KeyMethod(up, "") == up {
		method = up // GET, post, ...: the standard methods
	} else if method != ident.OtherMethod && !ident.IsToken(method) {
		return "", false
	}
	return method + " " + pattern, true
}
