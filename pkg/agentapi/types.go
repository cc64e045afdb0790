package agentapi

import "net/netip"

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
type HealthReport struct {
	VIP   netip.Addr `json:"vip"`
	Port  uint16     `json:"port"`
	OK    bool       `json:"ok"`
	Error string     `json:"error,omitempty"`
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
