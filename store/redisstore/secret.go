package redisstore

import "log/slog"

// warnPublicSecret says, once for the store New is creating, that no
// Config.Secret was set: the identities in the keys are hashed with a key
// anyone can read in sluice's source.
func warnPublicSecret(log *slog.Logger) {
	log.Warn("redisstore: Config.Secret is not set: identities (client IPs, API keys, users) are hashed into " +
		"Redis keys with sluice's built-in PUBLIC key, so anyone who can read the keys can test guesses against " +
		"them. Set Config.Secret to 32 random bytes, the same on every instance.")
}
