package lease

// HotTracked returns how many rules have a hot-key detector and how many
// keys they track in all.
func HotTracked(s *Store) (rules, keys int) { return s.hot.rules.Len() }

// SplitLimit is splitLimit, for the tests of package lease_test.
var SplitLimit = splitLimit

// Len returns the number of keys holding lease state.
func (s *Store) Len() int { return s.table.len() }
