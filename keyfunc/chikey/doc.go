// Package chikey adapts the keyfunc package to the chi router
// (github.com/go-chi/chi/v5): endpoint keys from chi's routing tree, and
// client IP keys from chi's ClientIPFrom* middlewares.
//
// It is separate from keyfunc so that keyfunc itself imports only the
// standard library.
package chikey
