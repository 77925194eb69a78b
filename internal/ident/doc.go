// Package ident holds the identity plumbing that keyfunc, keyfunc/chikey
// and the rules packages share: the normal form of client addresses and
// trusted prefixes, the key of an address, the endpoint key of a method and
// route pattern, header-name checks, and which key kinds may colocate. It
// uses the standard library only.
package ident
