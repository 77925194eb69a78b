package client

import (
	"errors"
	"strconv"
)

// The subset of Structured Field Values (RFC 9651) that rate-limit fields
// use: a List of Items or Inner Lists, each with Parameters. Every bare
// item type is parsed, so a valid field never fails; only Integers,
// Strings and Tokens are kept.

// sfKind is the type of a bare item.
type sfKind uint8

const (
	sfInteger sfKind = iota + 1
	sfDecimal
	sfString
	sfToken
	sfBytes
	sfBoolean
	sfDate
	sfDisplayString
	sfInnerList
)

// sfItem is a list member: a bare item (or an inner list, whose members are
// dropped) and its parameters.
type sfItem struct {
	kind   sfKind
	int    int64
	str    string // String or Token
	params []sfParam
}

type sfParam struct {
	key  string
	kind sfKind
	int  int64
	str  string
}

// param returns the Integer parameter key of it.
func (it *sfItem) intParam(key string) (int64, bool) {
	for _, p := range it.params {
		if p.key == key {
			return p.int, p.kind == sfInteger
		}
	}
	return 0, false
}

var errSF = errors.New("not a structured field list")

// maxSFLen bounds the input, whatever the number of field lines.
const maxSFLen = 8 << 10

// parseSFList parses s, the field lines of one field joined with ", ", as
// an SF List. A malformed field is an error: the whole field is ignored.
func parseSFList(s string) ([]sfItem, error) {
	if len(s) > maxSFLen {
		return nil, errSF
	}
	p := sfParser{s: s}
	p.skipSP()
	var out []sfItem
	for p.i < len(p.s) {
		it, err := p.member()
		if err != nil {
			return nil, err
		}
		out = append(out, it)
		p.skipOWS()
		if p.i == len(p.s) {
			return out, nil
		}
		if p.s[p.i] != ',' {
			return nil, errSF
		}
		p.i++
		p.skipOWS()
		if p.i == len(p.s) {
			return nil, errSF // a trailing comma
		}
	}
	return out, nil
}

type sfParser struct {
	s string
	i int
}

func (p *sfParser) skipSP() {
	for p.i < len(p.s) && p.s[p.i] == ' ' {
		p.i++
	}
}

func (p *sfParser) skipOWS() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

func (p *sfParser) member() (sfItem, error) {
	var it sfItem
	if p.i < len(p.s) && p.s[p.i] == '(' {
		if err := p.innerList(); err != nil {
			return it, err
		}
		it.kind = sfInnerList
	} else {
		k, n, s, err := p.bareItem()
		if err != nil {
			return it, err
		}
		it.kind, it.int, it.str = k, n, s
	}
	params, err := p.params()
	it.params = params
	return it, err
}

func (p *sfParser) innerList() error {
	p.i++ // '('
	for p.i < len(p.s) {
		p.skipSP()
		if p.i < len(p.s) && p.s[p.i] == ')' {
			p.i++
			return nil
		}
		if _, _, _, err := p.bareItem(); err != nil {
			return err
		}
		if _, err := p.params(); err != nil {
			return err
		}
		if p.i < len(p.s) && p.s[p.i] != ' ' && p.s[p.i] != ')' {
			return errSF
		}
	}
	return errSF
}

func (p *sfParser) params() ([]sfParam, error) {
	var out []sfParam
	for p.i < len(p.s) && p.s[p.i] == ';' {
		p.i++
		p.skipSP()
		key, err := p.key()
		if err != nil {
			return nil, err
		}
		prm := sfParam{key: key, kind: sfBoolean, int: 1}
		if p.i < len(p.s) && p.s[p.i] == '=' {
			p.i++
			if prm.kind, prm.int, prm.str, err = p.bareItem(); err != nil {
				return nil, err
			}
		}
		// A repeated key overwrites the earlier value (RFC 9651 §4.2.3.2).
		replaced := false
		for j := range out {
			if out[j].key == key {
				out[j], replaced = prm, true
			}
		}
		if !replaced {
			out = append(out, prm)
		}
	}
	return out, nil
}

func (p *sfParser) key() (string, error) {
	start := p.i
	if p.i >= len(p.s) || !(isLcalpha(p.s[p.i]) || p.s[p.i] == '*') {
		return "", errSF
	}
	for p.i < len(p.s) && (isLcalpha(p.s[p.i]) || isDigit(p.s[p.i]) || p.s[p.i] == '_' || p.s[p.i] == '-' || p.s[p.i] == '.' || p.s[p.i] == '*') {
		p.i++
	}
	return p.s[start:p.i], nil
}

// bareItem parses one bare item; Integers and Strings/Tokens carry their
// value.
func (p *sfParser) bareItem() (sfKind, int64, string, error) {
	if p.i >= len(p.s) {
		return 0, 0, "", errSF
	}
	switch c := p.s[p.i]; {
	case c == '-' || isDigit(c):
		return p.number()
	case c == '"':
		s, err := p.str()
		return sfString, 0, s, err
	case c == '*' || isAlpha(c):
		start := p.i
		for p.i < len(p.s) && isTokenChar(p.s[p.i]) {
			p.i++
		}
		return sfToken, 0, p.s[start:p.i], nil
	case c == ':':
		p.i++
		for p.i < len(p.s) && p.s[p.i] != ':' {
			if !isBase64(p.s[p.i]) {
				return 0, 0, "", errSF
			}
			p.i++
		}
		if p.i == len(p.s) {
			return 0, 0, "", errSF
		}
		p.i++
		return sfBytes, 0, "", nil
	case c == '?':
		if p.i+1 < len(p.s) && (p.s[p.i+1] == '0' || p.s[p.i+1] == '1') {
			p.i += 2
			return sfBoolean, int64(p.s[p.i-1] - '0'), "", nil
		}
	case c == '@':
		p.i++
		k, n, _, err := p.number()
		if err != nil || k != sfInteger {
			return 0, 0, "", errSF
		}
		return sfDate, n, "", nil
	case c == '%':
		return p.displayString()
	}
	return 0, 0, "", errSF
}

func (p *sfParser) number() (sfKind, int64, string, error) {
	start := p.i
	if p.i == len(p.s) {
		return 0, 0, "", errSF
	}
	if p.s[p.i] == '-' {
		p.i++
	}
	digits, dot, frac := 0, -1, 0
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case isDigit(c):
			if dot >= 0 {
				frac++
			} else {
				digits++
			}
		case c == '.' && dot < 0:
			if digits > 12 {
				return 0, 0, "", errSF
			}
			dot = p.i
		default:
			goto end
		}
		p.i++
		if dot < 0 && digits > 15 || dot >= 0 && frac > 3 {
			return 0, 0, "", errSF
		}
	}
end:
	if digits == 0 {
		return 0, 0, "", errSF
	}
	if dot >= 0 {
		if frac == 0 {
			return 0, 0, "", errSF
		}
		return sfDecimal, 0, "", nil
	}
	n, err := strconv.ParseInt(p.s[start:p.i], 10, 64)
	if err != nil {
		return 0, 0, "", errSF
	}
	return sfInteger, n, "", nil
}

func (p *sfParser) str() (string, error) {
	p.i++ // '"'
	var b []byte
	for p.i < len(p.s) {
		c := p.s[p.i]
		p.i++
		switch {
		case c == '\\':
			if p.i == len(p.s) || p.s[p.i] != '"' && p.s[p.i] != '\\' {
				return "", errSF
			}
			b = append(b, p.s[p.i])
			p.i++
		case c == '"':
			return string(b), nil
		case c < 0x20 || c > 0x7e:
			return "", errSF
		default:
			b = append(b, c)
		}
	}
	return "", errSF
}

// displayString checks a Display String (%"..." with %xx escapes of
// lowercase hex) without keeping it.
func (p *sfParser) displayString() (sfKind, int64, string, error) {
	if p.i+1 >= len(p.s) || p.s[p.i+1] != '"' {
		return 0, 0, "", errSF
	}
	p.i += 2
	for p.i < len(p.s) {
		c := p.s[p.i]
		p.i++
		switch {
		case c == '%':
			if p.i+1 >= len(p.s) || !isLowerHex(p.s[p.i]) || !isLowerHex(p.s[p.i+1]) {
				return 0, 0, "", errSF
			}
			p.i += 2
		case c == '"':
			return sfDisplayString, 0, "", nil
		case c < 0x20 || c > 0x7e:
			return 0, 0, "", errSF
		}
	}
	return 0, 0, "", errSF
}

func isDigit(c byte) bool    { return '0' <= c && c <= '9' }
func isLcalpha(c byte) bool  { return 'a' <= c && c <= 'z' }
func isAlpha(c byte) bool    { return isLcalpha(c) || 'A' <= c && c <= 'Z' }
func isLowerHex(c byte) bool { return isDigit(c) || 'a' <= c && c <= 'f' }
func isBase64(c byte) bool   { return isAlpha(c) || isDigit(c) || c == '+' || c == '/' || c == '=' }

// isTokenChar reports whether c may continue an SF Token (tchar, ':' or
// '/').
func isTokenChar(c byte) bool {
	if isAlpha(c) || isDigit(c) {
		return true
	}
	switch c {
	case '!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~', ':', '/':
		return true
	}
	return false
}
