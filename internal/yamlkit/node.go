package yamlkit

import (
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

const (
	// MaxAliasHops bounds the alias chain [Deref] follows.
	MaxAliasHops = 8
	// MaxQuoted is the longest text from a file that [Quote] repeats.
	MaxQuoted = 64
	// MaxFieldName is the longest unknown field name a message repeats;
	// a longer one is described by its length only.
	MaxFieldName = 24
)

// Deref follows aliases to the node they stand for, at most
// [MaxAliasHops] of them.
func Deref(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < MaxAliasHops; i++ {
		n = n.Alias
	}
	return n
}

// Describe names the kind of a node for "must be X, not Y" messages.
func Describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!null":
			return "null"
		case "!!int", "!!float":
			return "a number"
		case "!!bool":
			return "a boolean"
		}
		return "a string"
	}
	return "an alias"
}

// Sub returns the path of field name inside the field at path ("" for
// the top of the document).
func Sub(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// Elem returns the path of the i-th (0-based) element of the list at
// path.
func Elem(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

// Quote quotes text from a file for a message, shortened to [MaxQuoted]
// bytes.
func Quote(s string) string {
	if len(s) > MaxQuoted {
		return strconv.Quote(s[:MaxQuoted]) + "..."
	}
	return strconv.Quote(s)
}

// unknownField says that name is not one of known: quoted, with the
// closest known name or the list of them, or, for a name longer than
// MaxFieldName, by its length only.
func unknownField(name string, known []string) string {
	if len(name) > MaxFieldName { // perhaps a secret pasted in the wrong place
		return fmt.Sprintf("unknown field (a %d-byte name, not shown)", len(name))
	}
	return "unknown field " + Quote(name) + suggest(name, known)
}

// suggest returns " (did you mean "x"?)" for the known name closest to a
// misspelt one, or the list of known names.
func suggest(name string, known []string) string {
	best, bestD := "", 3
	for _, k := range known {
		if d := editDistance(strings.ToLower(name), k); d < bestD {
			best, bestD = k, d
		}
	}
	if best != "" {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	return " (known: " + strings.Join(known, ", ") + ")"
}

// editDistance is the Levenshtein distance of a and b, bytewise, capped
// for long inputs (which are never close to a field name).
func editDistance(a, b string) int {
	if len(a) > 2*len(b)+3 {
		return len(a)
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
