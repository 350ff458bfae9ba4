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
	ctx, stop := signalContext()
	defer stop()
	if err := newRootCommand().ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "kubeproof:", err)
		os.Exit(1)
	}
}

// signalContext is ended by the first SIGINT or SIGTERM, for the command to
// wind down (a server drains, a check lets its requests finish and cleans
// up, each bounded by a deadline of its own). Signals are then no longer
// caught, so a second one ends the process at once, as a second signal
// ends kube-apiserver: a user need not wait out a wind-down stuck on an
// unreachable server.
func signalContext() (context.Context, context.CancelFunc) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop()
	}()
	return ctx, stop
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
