package forwarding

import "fmt"

// EchoPolicy says what muxes do with ICMP echo requests to a VIP.
type EchoPolicy string

const (
	// EchoDrop (the default, "") drops them, counted, as muxes did before
	// the policy existed.
	EchoDrop EchoPolicy = "drop"
	// EchoAnswer: the mux answers them itself (the load balancer is up and
	// announces the VIP; says nothing of the servers).
	EchoAnswer EchoPolicy = "answer"
	// EchoPass hands them to the mux host's own stack, which answers if
	// the VIP is one of its addresses.
	EchoPass EchoPolicy = "pass"
)

// Code is the policy's value in the mux's VIP record.
func (p EchoPolicy) Code() uint8 {
	switch p {
	case EchoAnswer:
		return 1
	case EchoPass:
		return 2
	}
	return 0
}

func (p EchoPolicy) check() error {
	switch p {
	case "", EchoDrop, EchoAnswer, EchoPass:
		return nil
	}
	return fmt.Errorf("icmp_echo %q must be drop, answer or pass", p)
}
