package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/beamer-lb/beamer/pkg/lab"
	"github.com/spf13/cobra"
)

func init() {
	o := lab.DefaultDemo
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run a load balancer in network namespaces and show connections surviving server churn",
		Long: `Builds a small datacenter in network namespaces (a controller with its embedded
etcd store, a mux, servers running the agent and an HTTP server, clients), keeps
persistent HTTP connections downloading through the VIP, adds a server and removes
another, and prints how many connections broke. Everything is removed at the end.
Needs root.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if os.Geteuid() != 0 {
				return errors.New("the demo creates network namespaces and loads BPF programs: run it as root")
			}
			if o.Clients < 1 || o.PerClient < 1 || o.Servers < 3 || o.Buckets <= uint32(o.Servers) || o.FileSize < 1 {
				return errors.New("need ≥1 client, ≥1 connection each, ≥3 servers, more buckets than servers and a file of ≥1 byte")
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			s, err := lab.RunDemo(ctx, o, os.Stdout)
			if err != nil {
				return err
			}
			fmt.Printf("summary: strategy=%s connections=%d broken=%d\n", o.Strategy, s.Connections, s.Broken)
			return nil
		},
	}
	cmd.Flags().IntVar(&o.Clients, "clients", o.Clients, "client namespaces")
	cmd.Flags().IntVar(&o.PerClient, "connections", o.PerClient, "persistent connections per client")
	cmd.Flags().IntVar(&o.Servers, "servers", o.Servers, "servers (two at start, one added, one removed)")
	cmd.Flags().Uint32Var(&o.Buckets, "buckets", o.Buckets, "bucket count B")
	cmd.Flags().IntVar(&o.FileSize, "file-size", o.FileSize, "bytes per download")
	cmd.Flags().DurationVar(&o.Step, "step", o.Step, "time between events")
	cmd.Flags().StringVar(&o.Strategy, "strategy", o.Strategy, "beamer or maglev")
	rootCmd.AddCommand(cmd)
}
