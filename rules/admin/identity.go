package admin

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/sluicehq/sluice/keyfunc"
)

// maxIdentity bounds the identity an operator may type, in bytes.
const maxIdentity = 1024

// errIdentity reports an identity no key could read; the message says
// what is expected, never echoing the input.
type errIdentity string

func (e errIdentity) Error() string { return string(e) }

// identity is the identity of a query: a JSON string, or a JSON list of
// one string per part of a joined key.
type identity struct {
	texts []string
	list  bool
}

func (id *identity) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '[' {
		id.list = true
		return json.Unmarshal(b, &id.texts)
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	id.texts = []string{s}
	return nil
}

// parseIdentity checks what any identity must be, then reads it as key
// reads it: with the parser WithIdentity set for its kind, if any.
func (h *handler) parseIdentity(key keyfunc.Key, typed identity) (string, error) {
	if !typed.list && len(typed.texts) == 0 {
		typed.texts = []string{""} // no identity: as empty text
	}
	n := 0
	for _, s := range typed.texts {
		if n += len(s); n > maxIdentity {
			return "", errIdentity("identity longer than " + strconv.Itoa(maxIdentity) + " bytes")
		}
		if !utf8.ValidString(s) || strings.ContainsFunc(s, unicode.IsControl) {
			return "", errIdentity("an identity is UTF-8 text without control characters")
		}
	}
	var id string
	var err error
	if parse, ok := h.parsers[key.Kind()]; ok {
		if len(typed.texts) != 1 {
			return "", errIdentity("one identity, not a list: the identity's parser reads it whole")
		}
		id, err = parse(strings.Trim(typed.texts[0], " \t"))
	} else if typed.list {
		id, err = key.ParseParts(typed.texts)
	} else {
		id, err = key.Parse(typed.texts[0])
	}
	if err == nil && id == "" {
		err = errors.New("empty identity")
	}
	return id, err
}

// describe is the part of a 400's detail that says what is wrong with an
// identity: the form its key needs, for a keyfunc.FormError.
func describe(err error) string {
	var fe *keyfunc.FormError
	if !errors.As(err, &fe) {
		return err.Error()
	}
	if fe.Part > 0 {
		return fmt.Sprintf("part #%d of the list (%s): want %s", fe.Part, fe.Kind, fe.Form)
	}
	return "want " + fe.Form
}
