package agentapi

import (
	"net/netip"
	"time"
)

// DefaultPort is where agents serve the API and where the controller looks
// for it unless an instance says otherwise (agent_port).
const DefaultPort = 9300

// API paths.
const (
	HealthPath      = "/v1/health"
	ConnectionsPath = "/v1/connections"
)

// HealthReport answers GET /v1/health. OK false carries the probe's error
// text, which the controller logs and shows as the reason of a state change.
//
// The prober may add what it expects of the agent (Expect): server_id,
// buckets and window_s (the chaining window in seconds) of the instance.
// An agent configured otherwise answers OK false with Mismatch saying how,
// without probing: it would find the wrong bucket of a packet, or the
// wrong window, and break connections the controller thinks it keeps.
type HealthReport struct {
	VIP      netip.Addr `json:"vip"`
	Port     uint16     `json:"port"`
	OK       bool       `json:"ok"`
	Error    string     `json:"error,omitempty"`
	Mismatch string     `json:"mismatch,omitempty"`
	// Micros is how long the connect took, in microseconds.
	Micros int64 `json:"micros"`
}

// BucketCount is the number of connections of one bucket.
type BucketCount struct {
	Bucket uint32 `json:"bucket"`
	Count  uint32 `json:"count"`
}

// ConnectionsReport answers GET /v1/connections: buckets with at least one
// connection, by increasing index; a bucket not listed holds none.
type ConnectionsReport struct {
	VIP     netip.Addr    `json:"vip"`
	Buckets uint32        `json:"buckets"` // the table size the buckets were computed for
	Total   uint32        `json:"total"`   // connections counted
	Counts  []BucketCount `json:"counts"`
}

// ErrorReport is the body of every 4xx/5xx answer.
type ErrorReport struct {
	Error string `json:"error"`
}

// Expect is what a health probe tells the agent about the instance and
// the server it probes for; zero fields are not checked.
type Expect struct {
	ServerID uint16
	Buckets  uint32
	Window   time.Duration
}

// VIPParams is how an agent is configured for one VIP.
type VIPParams struct {
	Buckets uint32
	Window  time.Duration
}
