package keyfunc

import (
	"fmt"
	"strconv"
	"strings"
)

// IdentityParser turns an identity as an operator knows it (an address, a
// user id, "GET /users/{id}") into the identity a [Key] gives the requests
// it stands for, or returns an error saying what the text must be.
type IdentityParser func(typed string) (string, error)

// FormError reports text that is not an identity of a key's kind (see
// [Key.Parse]). Its message states the form the kind needs; it never
// repeats the text.
type FormError struct {
	// Kind is the kind of the key, or of the part, the text was for.
	Kind string
	// Part is the position, from 1, of the part of a joined key the text
	// was given for (see [Key.ParseParts]); 0 for a whole key.
	Part int
	// Form is what an identity of Kind is, with an example.
	Form string
}

func (e *FormError) Error() string {
	if e.Part > 0 {
		return fmt.Sprintf("keyfunc: part #%d: malformed %s identity: want %s", e.Part, e.Kind, e.Form)
	}
	return "keyfunc: malformed " + e.Kind + " identity: want " + e.Form
}

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

// Parse returns the identity k gives the requests of the identity typed,
// written as an operator knows it, or an error. It is how the operator
// handler (rules/admin) finds an identity's buckets: the result is exactly
// the identity k's function returns for such a request, never merely
// similar text, so a reset reaches the bucket those requests use.
//
// The form depends on the kind; surrounding spaces and tabs are ignored:
//
//   - ip ([IP], [ClientIP]): an address, "192.0.2.7" or "2001:db8::7",
//     normalised and grouped as the key groups it (an IPv6 address by the
//     key's prefix, /64 by default);
//   - global: "global", or nothing;
//   - endpoint (the endpoint keys, chikey.Endpoint): a method, a space and
//     a route pattern, "GET /users/{id}" ("GET <unmatched>" for requests no
//     route matched); a standard method is read in any case;
//   - user, api_key, header:NAME: the user id, the API key, the header's
//     value, as is;
//   - a joined key ([Join]): the identities of its parts in order,
//     separated by spaces, "alice GET /users/{id}" for user and endpoint. A
//     part whose identity may hold spaces (user, api_key, header) takes
//     the fields the other parts leave; when two such parts could split
//     the text in more than one way, the text is refused, and
//     [Key.ParseParts] takes one identity per part instead;
//   - a key of your own ([New]): its parser ([Key.ParseWith]); without
//     one, the identity as the key's function returns it, except that a
//     key made with New under a built-in kind's name ("ip", "endpoint",
//     ...) reads identities as that kind does.
//
// Text that is not in the form is an error wrapping a [*FormError]
// (test with errors.As) stating the form; a parser of your own returns
// its own errors.
func (k Key) Parse(typed string) (string, error) {
	if k.IsZero() {
		return "", &FormError{Kind: "zero Key", Form: "a Key made by this package's constructors"}
	}
	return k.formOf().parse(k.kind, typed)
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

// ParseParts is [Key.Parse] with one identity per part of a joined key
// ([Join]), for parts whose identities hold spaces: ParseParts([]string{"Alice
// Smith", "GET /users/{id}"}). For a key that is not joined (or whose
// parser was set with [Key.ParseWith]) typed must hold one identity. A
// malformed part's error is a [*FormError] naming the part.
func (k Key) ParseParts(typed []string) (string, error) {
	if k.IsZero() {
		return k.Parse("")
	}
	f := k.formOf()
	if f.parts == nil || f.custom != nil {
		if len(typed) != 1 {
			return "", &FormError{Kind: k.kind, Form: "one identity: " + f.String()}
		}
		return k.Parse(typed[0])
	}
	if len(typed) != len(f.parts) {
		return "", &FormError{Kind: k.kind, Form: f.listForm()}
	}
	var b []byte
	for i, p := range f.parts {
		id, err := p.formOf().parse(p.kind, typed[i])
		if fe, ok := err.(*FormError); ok && fe.Part == 0 {
			return "", &FormError{Kind: fe.Kind, Part: i + 1, Form: fe.Form}
		} else if err != nil {
			return "", fmt.Errorf("keyfunc: part #%d: %w", i+1, err)
		}
		b = appendNetstring(b, id)
	}
	return string(b), nil
}

// ParseWith returns k, except that [Key.Parse] reads identities with parse:
// for a key of your own whose function does more than return a value as
// it is (lower-cases it, looks it up), so that the operator's text becomes
// the identity the function returns. It panics if parse is nil.
func (k Key) ParseWith(parse IdentityParser) Key {
	if parse == nil {
		panic("keyfunc: ParseWith: nil parser")
	}
	k.form = &form{desc: "an identity the key's parser reads", custom: parse}
	return k
}

// formOf returns how k's identities are written.
func (k Key) formOf() *form {
	if k.form != nil {
		return k.form
	}
	return kindForm(k.kind)
}

// kindForm is the form of a key made by New, by its kind.
func kindForm(kind string) *form {
	switch kind {
	case "ip":
		return ipForm(DefaultIPv6Prefix)
	case "global":
		return globalForm
	case endpointKind:
		return endpointForm
	case "user":
		return userForm
	case apiKeyKind:
		return apiKeyForm("")
	case "user_endpoint":
		return joinForm([]Key{{kind: "user", form: userForm}, {kind: endpointKind, form: endpointForm}})
	}
	if name, ok := strings.CutPrefix(kind, "header:"); ok {
		return headerForm(name)
	}
	return asIsForm
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
	if !containsEmpty(examples) {
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

func containsEmpty(s []string) bool {
	for _, e := range s {
		if e == "" {
			return true
		}
	}
	return false
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
		id, err := IPKey(a, bits)
		return id, err == nil
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
// pattern names, or OtherMethod), a space and the pattern.
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
	if up := strings.ToUpper(method); keyMethod(up, "") == up {
		method = up // GET, post, ...: the standard methods
	} else if method != OtherMethod && !isToken(method) {
		return "", false
	}
	return method + " " + pattern, true
}

// isToken reports whether s is an RFC 9110 token, such as a method.
func isToken(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isTokenChar(s[i]) {
			return false
		}
	}
	return s != ""
}
