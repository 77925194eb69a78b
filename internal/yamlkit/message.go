package yamlkit

import (
	"strconv"
	"strings"
)

// Message lays out an error about a file as
//
//	prefix: file:line: scope: field: err
//
// leaving out the line when it is 0 and the scope, the field and err when
// they are empty or nil. scope is where in the file the problem is, such
// as `rule "per-ip"` or `domain "api"`.
func Message(prefix, file string, line int, scope, field string, err error) string {
	var b strings.Builder
	b.WriteString(prefix)
	b.WriteString(": ")
	b.WriteString(file)
	if line > 0 {
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(line))
	}
	for _, s := range [...]string{scope, field} {
		if s != "" {
			b.WriteString(": ")
			b.WriteString(s)
		}
	}
	if err != nil {
		b.WriteString(": ")
		b.WriteString(err.Error())
	}
	return b.String()
}
