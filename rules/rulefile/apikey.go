package rulefile

import (
	"crypto/sha256"
	"encoding/hex"
)

// apiKeyHashPrefix starts the form in which rule files list API keys.
const apiKeyHashPrefix = "sha256:"

// HashAPIKey returns the form in which a rule file's bypass entries list
// an API key: "sha256:" and the hexadecimal SHA-256 of the key. Files hold
// only this hash, never the key; a request's key is hashed and looked up,
// so no comparison ever runs on the key itself.
//
//	printf %s "$KEY" | sha256sum    # the same digest, from a shell
func HashAPIKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return apiKeyHashPrefix + hex.EncodeToString(sum[:])
}
