package retrypolicy

// Table holds a policy per worker name, with a default for the others.
type Table struct {
	Default Policy
	Workers map[string]Policy
}

// For returns the policy of worker, or the default.
func (t Table) For(worker string) Policy {
	if p, ok := t.Workers[worker]; ok {
		return p
	}
	return t.Default
}
