package cookie

// Where the cookie sits in the server's TSval (bpf/include/cheetah_cookie.h):
// bits 31..23 the server's clock, 22..7 the cookie, bit 6 clear only on a
// SYN-ACK, bits 5..0 a SYN-ACK's own low bits (Linux's SYN-cookie options),
// 63 otherwise.
const (
	CookieShift   = 7
	NotSynAck     = 1 << 6
	SynCookieBits = 1<<6 - 1
	ClockBits     = 0xff800000
)

// TSval is the timestamp the client sees for the server's tsval.
func TSval(tsval uint32, cookie uint16, synack bool) uint32 {
	low := uint32(NotSynAck | SynCookieBits)
	if synack {
		low = tsval & SynCookieBits
	}
	return tsval&ClockBits | uint32(cookie)<<CookieShift | low
}

// EchoedCookie is the cookie in a client's TSecr.
func EchoedCookie(tsecr uint32) uint16 { return uint16(tsecr >> CookieShift) }

// Restore is the TSecr the server's stack is shown for a client's echo:
// 0 ("no echo") except for the echo of a SYN-ACK reaching a listener — a
// SYN-cookie ACK — which keeps the 6 bits Linux decodes the SYN-cookie
// options from. An echo of 0 stays 0.
func Restore(echo uint32, listener bool) uint32 {
	if echo == 0 || echo&NotSynAck != 0 || !listener {
		return 0
	}
	return echo&SynCookieBits | NotSynAck
}

// PAWSAccepts says whether a client that last accepted TSval last accepts
// next, as Linux's PAWS check does for an established connection (window 1,
// comparison modulo 2^32).
func PAWSAccepts(last, next uint32) bool { return int32(last-next) <= 1 }
