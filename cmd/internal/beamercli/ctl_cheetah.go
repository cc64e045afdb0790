package beamercli

import (
	"fmt"
	"strings"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/controller"
	"github.com/beamer-lb/beamer/pkg/controlplane/ctlstrategy"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/strategy/cheetah"
	"github.com/beamer-lb/beamer/pkg/strategy/cheetah/cookie"
	"github.com/spf13/cobra"
)

// cheetahCreateFlags are ctl create's options of the cheetah strategy.
type cheetahCreateFlags struct {
	policy *string
	key    *string
}

func addCheetahFlags(cmd *cobra.Command) *cheetahCreateFlags {
	return &cheetahCreateFlags{
		policy: cmd.Flags().String("policy", string(forwarding.CheetahRR), "cheetah: how a new connection's server is picked: rr, wrr (by bucket share, i.e. weight), p2c (power of two choices over published loads) or hash (the Beamer bucket)"),
		key:    cmd.Flags().String("cheetah-keys-file", "", "cheetah: file (mode 600) holding the cookie keys KEY0[,KEY1[,CURRENT]], 32 hex digits each, or env "+cheetahKeysEnv+" (default: drawn at random); the controller pushes them to the agents; never on the command line, where ps shows them"),
	}
}

// refuse: cheetah flags given to another strategy.
func (f *cheetahCreateFlags) refuse(cmd *cobra.Command, _ *forwarding.Instance) error {
	if cmd.Flags().Changed("policy") || cmd.Flags().Changed("cheetah-keys-file") {
		return fmt.Errorf("--policy and --cheetah-keys-file are options of --strategy cheetah")
	}
	return nil
}

// apply fills the instance's cheetah options: the policy, and the keys
// from the file or the environment (drawn at random when neither).
func (f *cheetahCreateFlags) apply(cmd *cobra.Command, in *forwarding.Instance) error {
	text, err := cheetahKeysText("cheetah-keys-file", *f.key)
	if err != nil {
		return err
	}
	keys, err := parseCheetahKeys(text)
	if err != nil {
		return err
	}
	in.Cheetah = &forwarding.CheetahOptions{Policy: forwarding.CheetahPolicy(*f.policy), Keys: keys}
	return nil
}

// parseCheetahKeys reads KEY0[,KEY1[,CURRENT]]; keys not given are drawn
// at random (the second slot gets its own key: rotation writes the next
// key there and makes it current).
func parseCheetahKeys(s string) (cookie.Keys, error) {
	var ks cookie.Keys
	parts := []string{}
	if s != "" {
		parts = strings.Split(s, ",")
	}
	if len(parts) > 3 {
		return ks, fmt.Errorf("cheetah keys: %d fields, want KEY0[,KEY1[,CURRENT]]", len(parts))
	}
	for i := range ks.Keys {
		var err error
		if i < len(parts) {
			ks.Keys[i], err = cookie.ParseKey(parts[i])
		} else {
			ks.Keys[i], err = cookie.NewKey()
		}
		if err != nil {
			return ks, err
		}
	}
	if len(parts) == 3 {
		switch parts[2] {
		case "0":
		case "1":
			ks.Current = 1
		default:
			return ks, fmt.Errorf("cheetah keys: current key id must be 0 or 1")
		}
	}
	return ks, nil
}

// `ctl cheetah rotate-key NAME`: a new key in the slot new connections do
// not use, published to the muxes, made current --settle later
// (controller.RotateKey, pkg/strategy/cheetah); the controller pushes it to the agents.
// newCtlCheetahCommand is `ctl cheetah` and its `rotate-key`.
func newCtlCheetahCommand() *cobra.Command {
	group := &cobra.Command{Use: "cheetah", Short: "Operations of cheetah instances"}
	rot, f := newCtl(group, "rotate-key NAME [--settle D] [--min-age D] [--force]",
		"Rotate a cheetah instance's cookie key: connections keep the key id they started with, new ones take the new key after --settle", cobra.ExactArgs(1))
	settle := rot.Flags().Duration("settle", cheetah.DefaultSettle, "time the muxes get to load the new key before servers use it (longer than a mux may lag the store without being withdrawn)")
	minAge := rot.Flags().Duration("min-age", time.Hour, "refuse when the current key became current less than this ago: connections older than that carry the key this rotation overwrites")
	force := rot.Flags().Bool("force", false, "rotate even when --min-age or an agent that did not confirm the current keys says not to (their connections may break)")
	rot.RunE = func(_ *cobra.Command, args []string) error {
		res, err := f.submitResult(controller.Request{Op: controller.OpCheetahRotate, Instance: args[0],
			Rotation: &ctlstrategy.KeyRotation{Settle: *settle, MinAge: *minAge, Force: *force}})
		if err != nil {
			return err
		}
		fmt.Printf("instance %s: %s\n", args[0], res)
		return nil
	}
	return group
}
