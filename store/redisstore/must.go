package redisstore

// MustNew is like [New] but panics on an error, for a client and a
// configuration fixed in code (as rules.MustNew is for rules):
//
//	store := redisstore.MustNew(redisstore.MustNewClient("localhost:6379"), redisstore.Config{Secret: secret})
//
// New's errors are all about the client and the configuration, never about
// the server, which New does not contact: a panic here is a programming
// error, caught the first time the program starts.
func MustNew(client Client, cfg Config) *Store {
	s, err := New(client, cfg)
	if err != nil {
		panic(err)
	}
	return s
}
