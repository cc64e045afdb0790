package hashsim

// Report is everything `beamer-lab sim hashing` prints; its JSON form is read
// by scripts (see docs/hashing.md for the contract).
type Report struct {
	Config           Config          `json:"config"`
	Table1           []Table1Row     `json:"table1"`
	MaglevBalance    []BalanceRow    `json:"maglev_balance"`
	MaglevResilience []ResilienceRow `json:"maglev_resilience"`
	BuildTimeMs      []BuildTimeRow  `json:"build_time_ms"`
	Fragmentation    []FragRow       `json:"fragmentation"`
	DefragRun        []DefragPoint   `json:"defrag_run"`
	Scale            []ScaleRow      `json:"scale,omitempty"`
}

// Run validates c and runs every experiment.
func Run(c Config) (*Report, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	r := &Report{Config: c}
	var err error
	if r.Table1, err = Table1(c); err != nil {
		return nil, err
	}
	if r.MaglevBalance, err = Balance(c); err != nil {
		return nil, err
	}
	if r.MaglevResilience, err = Resilience(c); err != nil {
		return nil, err
	}
	if r.BuildTimeMs, err = BuildTimes(c); err != nil {
		return nil, err
	}
	if r.Fragmentation, err = Fragmentation(c); err != nil {
		return nil, err
	}
	if r.DefragRun, err = DefragRun(c); err != nil {
		return nil, err
	}
	if c.Scale {
		if r.Scale, err = Scale(c); err != nil {
			return nil, err
		}
	}
	return r, nil
}
