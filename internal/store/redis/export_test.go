package redis

// LoseMoves drops the Store's pending far-back moves and its views, as a
// node that dies before it flushes: for tests.
func (s *Store) LoseMoves() (lost int) {
	f := s.far
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.rooms {
		lost += len(r.pending)
		r.pending, r.view = nil, nil
	}
	return lost
}
