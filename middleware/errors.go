package middleware

import "errors"

// Errors an [ErrorHandler] receives, wrapping the cause. Test with
// [errors.Is].
var (
	// ErrKeyFailed: a rule's key function could not key the request.
	ErrKeyFailed = errors.New("middleware: cannot key request")
	// ErrStoreFailed: the store failed and a matched rule's on_fail policy
	// is closed. The store's error (a *sluice.StoreError) is wrapped too.
	ErrStoreFailed = errors.New("middleware: store failed")
	// ErrInvalidCost: the request's context set a negative cost
	// (sluice.WithCost): a bug in the server, not the client.
	ErrInvalidCost = errors.New("middleware: invalid request cost")
)
