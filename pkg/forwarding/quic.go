package forwarding

import "fmt"

// QUICOptions: the mux reads a server id from the destination connection
// id (DCID) of UDP packets to the QUIC ports (among the service ports) and sends
// the packet to that server, whatever its addresses and ports — a client
// that migrates (new address or port) keeps reaching its server, and so
// does a connection whose bucket moved. The CID layout is the QUIC-LB
// draft's plaintext mode (draft-ietf-quic-load-balancers, "plaintext CID
// algorithm") with a 2-byte server id, the Beamer server id:
//
//	byte 0: config rotation (3 high bits) | CID length self-encoding (5 low bits)
//	bytes 1–2: server id, big-endian (1025–65535)
//	bytes 3..: nonce chosen by the server (at least 4 bytes)
//
// Packets that carry no server-chosen CID (a client's Initial and 0-RTT
// packets), a CID of another config rotation, or an id not in the server
// table go by bucket, as other UDP packets do. docs/wire-format.md, "QUIC".
type QUICOptions struct {
	// ConfigID is the config rotation codepoint servers put in the CID's
	// first byte, 0–6 (7 is the draft's "unroutable").
	ConfigID uint8 `json:"config_id" yaml:"config_id"`
	// CIDLen is the length of the CIDs the servers issue, 7–20 bytes: the
	// mux needs it to find the id in short headers, which do not say.
	CIDLen uint8 `json:"cid_len" yaml:"cid_len"`
	// Ports are the UDP service ports that carry QUIC (0-0: 443); other
	// UDP services (DNS, ...) are never read as QUIC.
	Ports PortRange `json:"ports,omitempty" yaml:"ports,omitempty"`
}

// QUICPorts is the effective QUIC port range.
func (q *QUICOptions) QUICPorts() PortRange {
	if q.Ports.Low == 0 {
		return PortRange{443, 443}
	}
	return q.Ports
}

// QUIC CID layout constants (QUIC-LB plaintext mode, 2-byte server id).
const (
	QUICServerIDLen = 2
	QUICMinCIDLen   = 1 + QUICServerIDLen + 4
	QUICMaxCIDLen   = 20
	QUICUnroutable  = 7
)

func (q *QUICOptions) check(in *Instance) error {
	if q == nil {
		return nil
	}
	if q.ConfigID >= QUICUnroutable {
		return fmt.Errorf("quic config_id %d must be 0–6 (7 means unroutable)", q.ConfigID)
	}
	if q.CIDLen < QUICMinCIDLen || q.CIDLen > QUICMaxCIDLen {
		return fmt.Errorf("quic cid_len %d must be %d–%d", q.CIDLen, QUICMinCIDLen, QUICMaxCIDLen)
	}
	if q.Ports.Low > q.Ports.High {
		return fmt.Errorf("quic ports %v: low above high", q.Ports)
	}
	qp := q.QUICPorts()
	for _, v := range in.VIPs {
		for _, r := range in.PortsOf(v).UDP {
			if r.overlaps(qp) {
				return nil
			}
		}
	}
	return fmt.Errorf("quic ports %v are no UDP service port of any VIP", qp)
}

// QUICConnID builds a connection id of the layout above for server id,
// with nonce filling the rest (len(nonce) = CIDLen - 3).
func (q *QUICOptions) QUICConnID(id ServerID, nonce []byte) []byte {
	cid := make([]byte, 0, int(q.CIDLen))
	cid = append(cid, q.ConfigID<<5|(q.CIDLen-1)&0x1f, byte(id>>8), byte(id))
	cid = append(cid, nonce...)
	return cid[:q.CIDLen]
}
