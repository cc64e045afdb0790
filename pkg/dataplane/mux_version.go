package dataplane

// Version is the incarnation and generation of the named instance's loaded
// table: what the mux daemon compares with the store's latest pointer.
func (m *Mux) Version(name string) (incarnation, generation uint32, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	in, ok := m.instances[name]
	if !ok {
		return 0, 0, false
	}
	return in.table.Incarnation, in.table.Generation, true
}

// Digest is forwarding.Table.Digest of the named instance's loaded table.
func (m *Mux) Digest(name string) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	in, ok := m.instances[name]
	if !ok {
		return "", false
	}
	return in.table.Digest(), true
}
