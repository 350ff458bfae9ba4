package etcd3

// SparedDecodes is how many decodes s's creates and watches have spared
// by handing one over (see sharedDecodes).
func SparedDecodes(s *Store) int64 { return s.shared.spared.Load() }

// PendingSharedDecodes is how many writes s is handing over.
func PendingSharedDecodes(s *Store) int {
	s.shared.mu.Lock()
	defer s.shared.mu.Unlock()
	return len(s.shared.pending)
}

// NewCreateTxn is newCreateTxn: the request a create sends through a
// RequestTxner.
var NewCreateTxn = newCreateTxn
