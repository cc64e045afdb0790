package beamercli

import (
	"errors"
	"fmt"
	"net/netip"
	"regexp"

	"github.com/spf13/cobra"
)

// parseAddrFlag reads an optional address flag: the zero Addr when the
// flag was not given.
func parseAddrFlag(name, value string) (netip.Addr, error) {
	if value == "" {
		return netip.Addr{}, nil
	}
	a, err := netip.ParseAddr(value)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("--%s: %w", name, err)
	}
	return a, nil
}

// errMissingBuckets: `ctl create` has no bucket count to assume for a
// beamer instance (the right B depends on how many DIPs it will have).
var errMissingBuckets = errors.New("--buckets is required for --strategy beamer: the bucket count B, larger than the most DIPs the instance will have (about 100 per DIP, e.g. --buckets 6400 for up to 64)")

// shorthandNumber matches pflag's error for a negative number given where
// a positional argument was meant ("unknown shorthand flag: '5' in -5").
var shorthandNumber = regexp.MustCompile(`^unknown shorthand flag: '[0-9]' in (-[0-9][^ ]*)$`)

// flagError turns pflag's message for a negative number into one that says
// what happened: ids, weights and counts are positive, and the number was
// read as a flag.
func flagError(_ *cobra.Command, err error) error {
	if m := shorthandNumber.FindStringSubmatch(err.Error()); m != nil {
		return fmt.Errorf("%s is not a valid value: server ids, weights and counts are positive numbers (a leading '-' makes it read as a flag)", m[1])
	}
	return err
}
