package httpserver

import (
	"time"

	"golang.org/x/time/rate"
)

// Limits bound one server. Zero fields take the value of Defaults.
type Limits struct {
	ReadHeaderTimeout time.Duration // also bounds the TLS handshake
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	MaxHeaderBytes    int
	MaxBodyBytes      int64
	// MaxConns bounds open connections from remote sources, PerSourceConns
	// those of one source address, LocalConns those of loopback peers
	// (counted apart from MaxConns).
	MaxConns       int
	PerSourceConns int
	LocalConns     int
	// PerSourceRate and PerSourceBurst bound requests of one source
	// address; MaxSources bounds how many sources are tracked (beyond it,
	// new sources share one limiter).
	PerSourceRate  rate.Limit
	PerSourceBurst int
	MaxSources     int
	// Exempt paths skip the request rate (cheap reads such as /healthz).
	Exempt []string
}

// Defaults are the bounds of a node API: generous for one controller
// probing a few hundred VIP ports, small against a flood.
func Defaults() Limits {
	return Limits{
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       30 * time.Second,
		MaxHeaderBytes:    8 << 10,
		MaxBodyBytes:      64 << 10,
		MaxConns:          512,
		PerSourceConns:    32,
		LocalConns:        128,
		PerSourceRate:     200,
		PerSourceBurst:    400,
		MaxSources:        4096,
	}
}

func (l Limits) filled() Limits {
	d := Defaults()
	set := func(v *time.Duration, def time.Duration) {
		if *v <= 0 {
			*v = def
		}
	}
	set(&l.ReadHeaderTimeout, d.ReadHeaderTimeout)
	set(&l.ReadTimeout, d.ReadTimeout)
	set(&l.WriteTimeout, d.WriteTimeout)
	set(&l.IdleTimeout, d.IdleTimeout)
	seti := func(v *int, def int) {
		if *v <= 0 {
			*v = def
		}
	}
	seti(&l.MaxHeaderBytes, d.MaxHeaderBytes)
	seti(&l.MaxConns, d.MaxConns)
	seti(&l.PerSourceConns, d.PerSourceConns)
	seti(&l.LocalConns, d.LocalConns)
	seti(&l.PerSourceBurst, d.PerSourceBurst)
	seti(&l.MaxSources, d.MaxSources)
	if l.MaxBodyBytes <= 0 {
		l.MaxBodyBytes = d.MaxBodyBytes
	}
	if l.PerSourceRate <= 0 {
		l.PerSourceRate = d.PerSourceRate
	}
	return l
}
