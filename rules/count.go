package rules

import (
	"fmt"
	"strconv"
	"strings"
)

// Count makes a rule count only the requests whose responses it lists,
// such as failed logins: "5 per account per 15 minutes" of the responses
// 401 and 403. A request still takes its cost when it is admitted, so
// that concurrent requests can never pass the limit together; when it is
// over and its status is not listed, what it took is given back (an exact
// refund through the store's receipt, [sluice.Refunder]).
//
// A handler that panics ends its request as 500; one that returns without
// writing as 200, as net/http answers. A request whose end its front end
// cannot see (the Envoy service, a store that cannot give back) counts,
// whatever its status: a counting rule never counts less than it should.
type Count struct {
	// Status lists the HTTP statuses that count, each from 100 to 599.
	Status []int
	// Classes lists the classes of HTTP statuses that count, by their
	// first digit, from 1 to 5: 5 counts every 5xx status.
	Classes []int
	// GRPC lists the gRPC status codes that count, for calls through the
	// gRPC interceptors. An HTTP request is judged by Status and Classes
	// only, a gRPC call by GRPC only.
	GRPC []GRPCCode

	http [10]uint64 // statuses 0 to 639, filled by compile
	grpc uint32     // a bit per code, filled by compile
	done bool       // compiled
}

// Counts reports whether a request that ended with s counts: its status
// is listed, or s is unknown (the zero Status).
func (c *Count) Counts(s Status) bool {
	if c == nil || s.kind == endUnknown {
		return true
	}
	if !c.done {
		c = c.compile()
	}
	if s.kind == endGRPC {
		return s.code < 32 && c.grpc&(1<<s.code) != 0
	}
	return s.code >= 0 && s.code < 640 && c.http[s.code/64]&(1<<(s.code%64)) != 0
}

// validate checks c, returning the field and what is wrong, or "".
func (c *Count) validate() (field, problem string) {
	switch {
	case c == nil:
		return "", ""
	case len(c.Status) == 0 && len(c.Classes) == 0 && len(c.GRPC) == 0:
		return "count", "lists no status: list HTTP statuses, classes or gRPC codes, or leave count out to count every request"
	}
	for _, s := range c.Status {
		if s < 100 || s > 599 {
			return "count.status", fmt.Sprintf("%d is not an HTTP status (100 to 599)", s)
		}
	}
	for _, k := range c.Classes {
		if k < 1 || k > 5 {
			return "count.status", fmt.Sprintf("class %d is not a class of HTTP statuses (1xx to 5xx)", k)
		}
	}
	for _, g := range c.GRPC {
		if int(g) >= len(grpcNames) {
			return "count.grpc", fmt.Sprintf("%d is not a gRPC status code (0 to %d)", g, len(grpcNames)-1)
		}
	}
	return "", ""
}

// compile returns a copy of c, its lists copied, ready to answer Counts
// without scanning them.
func (c *Count) compile() *Count {
	if c == nil {
		return nil
	}
	k := &Count{
		Status:  append([]int(nil), c.Status...),
		Classes: append([]int(nil), c.Classes...),
		GRPC:    append([]GRPCCode(nil), c.GRPC...),
		done:    true,
	}
	set := func(s int) { k.http[s/64] |= 1 << (s % 64) }
	for _, s := range k.Status {
		if s >= 0 && s < 640 {
			set(s)
		}
	}
	for _, class := range k.Classes {
		for s := class * 100; s < class*100+100 && s >= 0 && s < 640; s++ {
			set(s)
		}
	}
	for _, g := range k.GRPC {
		if g < 32 {
			k.grpc |= 1 << g
		}
	}
	return k
}

// ParseStatus reads one entry of a rule file's count.status list: an HTTP
// status from 100 to 599 ("401"), or a class of them ("5xx", "4XX").
// It returns the status, or, for a class, 0 and its first digit.
func ParseStatus(s string) (status, class int, err error) {
	if len(s) == 3 && (s[1:] == "xx" || s[1:] == "XX") {
		if s[0] < '1' || s[0] > '5' {
			return 0, 0, fmt.Errorf("unknown status class %q (1xx to 5xx)", s)
		}
		return 0, int(s[0] - '0'), nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, 0, fmt.Errorf("unknown status %q (an HTTP status such as 401, or a class such as 5xx)", s)
	}
	if n < 100 || n > 599 {
		return 0, 0, fmt.Errorf("%d is not an HTTP status (100 to 599)", n)
	}
	return n, 0, nil
}

// Status is how a request ended, which a rule counting by outcome
// ([Count]) judges it by: an HTTP status ([HTTPStatus]) or a gRPC code
// ([GRPCStatus]). The zero Status is unknown, and counts.
type Status struct {
	kind uint8
	code int
}

const (
	endUnknown uint8 = iota
	endHTTP
	endGRPC
)

// HTTPStatus returns the end of an HTTP request answered with status.
func HTTPStatus(status int) Status { return Status{kind: endHTTP, code: status} }

// GRPCStatus returns the end of a gRPC call that ended with code.
func GRPCStatus(code GRPCCode) Status { return Status{kind: endGRPC, code: int(code)} }

// String returns "401", "grpc Unauthenticated" or "unknown".
func (s Status) String() string {
	switch s.kind {
	case endHTTP:
		return strconv.Itoa(s.code)
	case endGRPC:
		return "grpc " + GRPCCode(s.code).String()
	}
	return "unknown"
}

// GRPCCode is a gRPC status code. Its values are those of
// google.golang.org/grpc/codes.Code, so a code converts either way:
// rules.GRPCCode(codes.Unauthenticated).
type GRPCCode uint32

// grpcNames are the codes' names, as google.golang.org/grpc/codes spells
// them, by value.
var grpcNames = [...]string{
	"OK", "Canceled", "Unknown", "InvalidArgument", "DeadlineExceeded",
	"NotFound", "AlreadyExists", "PermissionDenied", "ResourceExhausted",
	"FailedPrecondition", "Aborted", "OutOfRange", "Unimplemented",
	"Internal", "Unavailable", "DataLoss", "Unauthenticated",
}

// String returns the code's name, such as "Unauthenticated".
func (c GRPCCode) String() string {
	if int(c) < len(grpcNames) {
		return grpcNames[c]
	}
	return "Code(" + strconv.FormatUint(uint64(c), 10) + ")"
}

// ParseGRPCCode returns the gRPC status code named name, as
// google.golang.org/grpc/codes spells it ("Unauthenticated"); the
// protocol's upper-case form ("UNAUTHENTICATED", "PERMISSION_DENIED") is
// accepted too.
func ParseGRPCCode(name string) (GRPCCode, error) {
	folded := strings.ReplaceAll(name, "_", "")
	for i, n := range grpcNames {
		if n == name || strings.ToUpper(n) == folded && strings.ToUpper(name) == name {
			return GRPCCode(i), nil
		}
	}
	if name == "CANCELLED" || name == "Cancelled" {
		return 1, nil // the protocol's spelling
	}
	return 0, fmt.Errorf("unknown gRPC status code %q (known: %s)", name, strings.Join(grpcNames[:], ", "))
}

// String describes c as a rule file writes it: "status=[401 403 5xx]
// grpc=[Unauthenticated]", each list only when not empty.
func (c *Count) String() string {
	if c == nil {
		return "all"
	}
	var parts []string
	if len(c.Status) > 0 || len(c.Classes) > 0 {
		var s []string
		for _, v := range c.Status {
			s = append(s, strconv.Itoa(v))
		}
		for _, k := range c.Classes {
			s = append(s, strconv.Itoa(k)+"xx")
		}
		parts = append(parts, "status=["+strings.Join(s, " ")+"]")
	}
	if len(c.GRPC) > 0 {
		var s []string
		for _, g := range c.GRPC {
			s = append(s, g.String())
		}
		parts = append(parts, "grpc=["+strings.Join(s, " ")+"]")
	}
	return strings.Join(parts, " ")
}
