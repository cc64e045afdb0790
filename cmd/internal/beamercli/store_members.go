package beamercli

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/beamer-lb/beamer/pkg/store/etcdstore"
	"github.com/beamer-lb/beamer/pkg/store/storeurl"
	"github.com/spf13/cobra"
)

// newStoreCommand groups what an operator does to the store itself rather
// than to instances: the membership of the replicated embedded etcd
// (docs/control-plane.md, "Three controller hosts on the embedded store").
// It holds a store client certificate, as the controller does, so it runs
// on a controller host; `beamer ctl` never touches the store.
func newStoreCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "store", Short: "Administer the store itself: the members of a replicated embedded etcd"}
	members := newStoreSub(cmd, "members", "List the embedded etcd cluster's members (add, remove: change them)", cobra.NoArgs,
		func(ctx context.Context, cmd *cobra.Command, s *etcdstore.Store, _ []string) error {
			ms, err := s.Members(ctx)
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 2, 4, 2, ' ', 0)
			fmt.Fprintln(w, "ID\tNAME\tPEER\tCLIENT")
			for _, m := range ms {
				name := m.Name
				if !m.Started() {
					name = "(not started)"
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", m.HexID(), name, strings.Join(m.PeerURLs, ","), strings.Join(m.ClientURLs, ","))
			}
			return w.Flush()
		})
	newStoreSub(members, "add NAME PEER-ADDR", "Add a member reached by the others at PEER-ADDR (HOST:PORT); then start it with the printed parameters", cobra.ExactArgs(2),
		func(ctx context.Context, cmd *cobra.Command, s *etcdstore.Store, args []string) error {
			initial, err := s.AddMember(ctx, args[0], args[1])
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "added member %s; start it (empty data directory) with these store URL parameters:\nname=%s&initial-cluster=%s&cluster-state=existing\n", args[0], args[0], initial)
			return nil
		})
	newStoreSub(members, "remove NAME|ID|PEER-ADDR", "Remove a member (a dead one, or one leaving); a member added but never started has no name: give its ID or peer address", cobra.ExactArgs(1),
		func(ctx context.Context, cmd *cobra.Command, s *etcdstore.Store, args []string) error {
			m, err := s.RemoveMember(ctx, args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "removed member %s (ID %s, peer %s)\n", m.Name, m.HexID(), strings.Join(m.PeerURLs, ","))
			return nil
		})
	return cmd
}

// newStoreSub adds a store subcommand with --store, --insecure and
// --timeout; do runs on the etcd store named by --store, which it connects
// to and never serves (embed:// reaches the server a controller runs).
func newStoreSub(parent *cobra.Command, use, short string, args cobra.PositionalArgs,
	do func(context.Context, *cobra.Command, *etcdstore.Store, []string) error) *cobra.Command {
	cmd := &cobra.Command{Use: use, Short: short, Args: args}
	url := addStoreFlag(cmd)
	timeout := cmd.Flags().Duration("timeout", 30*time.Second, "how long the command may take")
	cmd.RunE = func(cmd *cobra.Command, a []string) error {
		t, err := storeurl.Parse(*url)
		if err != nil {
			return err
		}
		if t.Scheme == "zk" {
			return fmt.Errorf("store members: %s is ZooKeeper, whose ensemble is ZooKeeper's own to change (zkCli.sh reconfig); this command changes an etcd cluster's members", *url)
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), *timeout)
		defer cancel()
		st, _, err := storeurl.OpenWith(ctx, *url, storeurl.Options{Insecure: insecureStore, ConnectOnly: true})
		if err != nil {
			return fmt.Errorf("open store: %w", err)
		}
		defer st.Close()
		s, ok := st.(*etcdstore.Store)
		if !ok {
			return fmt.Errorf("store members: %s is not etcd", *url)
		}
		return do(ctx, cmd, s, a)
	}
	parent.AddCommand(cmd)
	return cmd
}
