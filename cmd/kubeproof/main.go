// Command kubeproof is the one binary of kubeproof: the all-in-one control
// plane (`up`), each component on its own, the model checker, the checkers
// and the benchmarks.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newRootCommand().ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "kubeproof:", err)
		os.Exit(1)
	}
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "kubeproof",
		Short:         "A formally specified, property-tested Kubernetes pod-creation pipeline",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	// Every subcommand is listed here, one constructor each.
	for _, newCmd := range []func() *cobra.Command{
		newUpCommand,
		newAPIServerCommand,
		newBenchCommand,
		newControllerManagerCommand,
		newSchedulerCommand,
		newKubeletCommand,
		newNodeCommand,
		newModelCommand,
		newCheckCommand,
	} {
		root.AddCommand(newCmd())
	}
	return root
}
