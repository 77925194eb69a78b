package keyfunc

import (
	"fmt"
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
