package lease

// HotTracked returns how many rules have a hot-key detector and how many
// keys they track in all.
func HotTracked(s *Store) (rules, keys int) {
	s.hot.mu.Lock()
	defer s.hot.mu.Unlock()
	for _, d := range s.hot.rules {
		d.mu.Lock()
		keys += len(d.top)
		d.mu.Unlock()
	}
	return len(s.hot.rules), keys
}

// SplitLimit is splitLimit, for the tests of package lease_test.
var SplitLimit = splitLimit

// Len returns the number of keys holding lease state.
func (s *Store) Len() int { return s.table.len() }
