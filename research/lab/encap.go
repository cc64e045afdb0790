package lab

import (
	"fmt"

	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// The lab's encapsulation option: the instance's encap (`ctl create
// --encap`), so an experiment runs over GUE (docs/wire-format.md, "GUE")
// as well as over IP-in-IP with the option. The agents take GUE on the
// default port without being told; the fabric's MTU (1600) has room for
// GUE's longest outer headers (72 bytes).

// checkEncap accepts "" (the default, ipip), ipip and gue.
func checkEncap(e string) error {
	switch forwarding.Encap(e) {
	case "", forwarding.EncapIPIP, forwarding.EncapGUE:
		return nil
	}
	return fmt.Errorf("encap %q: want ipip or gue", e)
}

// encapArgs are ctl create's arguments for the encapsulation.
func encapArgs(e string) []string {
	if e == "" {
		return nil
	}
	return []string{"--encap", e}
}

// encapNote names a non-default encapsulation in the run's first line.
func encapNote(e string) string {
	if e == "" {
		return ""
	}
	return ", encap " + e
}
