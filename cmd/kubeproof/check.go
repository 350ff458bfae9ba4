package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubeproof/kubeproof/linearizability"
)

// newCheckCommand is `kubeproof check`, the checkers that run against any
// API server.
func newCheckCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Check an API server's consistency guarantees",
	}
	cmd.AddCommand(newCheckLinearizabilityCommand())
	return cmd
}

// newCheckLinearizabilityCommand is `kubeproof check linearizability`.
func newCheckLinearizabilityCommand() *cobra.Command {
	var (
		logs            logOptions
		kubeconfig      string
		kubeContext     string
		namespace       string
		duration        time.Duration
		clients         int
		watchers        int
		keys            int
		reportDir       string
		reportOnSuccess bool
		seed            uint64
	)
	cmd := &cobra.Command{
		Use:   "linearizability [--kubeconfig FILE] [--context NAME]",
		Short: "Record a concurrent history of ConfigMap operations and watches, and check it",
		Long: `Record a concurrent history against any API server — the one of --kubeconfig (default:
$KUBECONFIG, else ~/.kube/config, as kubectl finds it) and --context — create, get and list at every
resourceVersion semantics, update and delete with and without preconditions, merge patch,
paginated lists, and watches with selectors, bookmarks, sendInitialEvents and resumption —
then check it: linearizability of the per-object histories with porcupine, the cross-object
revision order, every read and list against its resourceVersion semantics, and every watch
stream (ordered, unique, atomic, bookmarkable, reliable, resumable, initial events, selector
transitions). Prints one summary line; exits non-zero when a guarantee is broken.

On failure (and with --report-on-success also on success) writes a report into --report:
history.html (open in a browser), operations.json, watches.json, violations.json,
summary.txt. See linearizability/README.md for how to read it.

Afterwards the run's ConfigMaps are deleted. Without --namespace a fresh namespace is
created and deleted after them (on an API server without a namespace controller it stays
Terminating, empty); with it, the namespace stays.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			logger, err := logs.logger()
			if err != nil {
				return err
			}
			if err := validateCheckSize(clients, watchers, keys, duration); err != nil {
				return err
			}
			cfg, err := loadClientConfig(kubeconfig, kubeContext)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			ownNamespace := namespace == ""
			if ownNamespace {
				namespace = fmt.Sprintf("kubeproof-lin-%06x", rand.Uint32()&0xffffff)
			}
			rec, err := linearizability.NewRecorder(linearizability.RecordConfig{
				Scenario: "check " + cfg.Host, Servers: []*rest.Config{cfg}, Namespace: namespace,
				Clients: clients, Watchers: recorderWatchers(watchers), Keys: keys, Duration: duration, Seed: seed, Logger: logger,
			})
			if err != nil {
				return err
			}
			h, err := rec.Run(ctx)
			// The ConfigMaps go first also from the run's own namespace:
			// without a namespace controller (a bare API server) a deleted
			// namespace stays Terminating with everything in it.
			if h != nil {
				deleteConfigMaps(cfg, namespace, h.Keys)
			}
			if ownNamespace {
				deleteNamespace(cfg, namespace)
			}
			if err != nil {
				return err
			}
			res := linearizability.Check(h, linearizability.CheckOptions{})
			fmt.Fprintln(cmd.OutOrStdout(), linearizability.Summary(h, res))
			if !res.OK() || reportOnSuccess {
				if err := linearizability.WriteReport(reportDir, h, res); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "report: %s/history.html\n", reportDir)
			}
			if !res.OK() {
				for i, v := range res.Violations {
					if i == 10 {
						fmt.Fprintf(cmd.OutOrStdout(), "… %d more in %s/violations.json\n", len(res.Violations)-10, reportDir)
						break
					}
					fmt.Fprintln(cmd.OutOrStdout(), v)
				}
				return fmt.Errorf("linearizability check failed: %d violations", len(res.Violations))
			}
			return nil
		},
	}
	fs := cmd.Flags()
	logs.addFlags(fs)
	fs.StringVar(&kubeconfig, "kubeconfig", "", "Kubeconfig of the API server to check (default: $KUBECONFIG, else ~/.kube/config, as kubectl).")
	fs.StringVar(&kubeContext, "context", "", "Kubeconfig context to use (default: its current-context).")
	fs.StringVar(&namespace, "namespace", "", "Namespace for the test ConfigMaps: they are deleted afterwards, the namespace stays (default: a fresh namespace, deleted afterwards).")
	fs.DurationVar(&duration, "duration", 30*time.Second, "How long to record.")
	fs.IntVar(&clients, "clients", 8, "Concurrent clients.")
	fs.IntVar(&watchers, "watchers", 3, "Concurrent watchers (0: none, no watch stream is checked).")
	fs.IntVar(&keys, "keys", 5, "Number of ConfigMaps operated on.")
	fs.StringVar(&reportDir, "report", "linearizability-report", "Directory for the report.")
	fs.BoolVar(&reportOnSuccess, "report-on-success", false, "Write the report also when every check passes.")
	fs.Uint64Var(&seed, "seed", 0, "Seed of the operation mix (0: random).")
	return cmd
}

// validateCheckSize refuses the sizes of a run the recorder would
// otherwise replace by its defaults without a word (a client or key
// count below 1) or that would record without end (a duration not
// above 0), all of them at once.
func validateCheckSize(clients, watchers, keys int, duration time.Duration) error {
	var errs []error
	if clients < 1 {
		errs = append(errs, fmt.Errorf("--clients must be at least 1, got %d", clients))
	}
	if watchers < 0 {
		errs = append(errs, fmt.Errorf("--watchers must not be negative, got %d", watchers))
	}
	if keys < 1 {
		errs = append(errs, fmt.Errorf("--keys must be at least 1, got %d", keys))
	}
	if duration <= 0 {
		errs = append(errs, fmt.Errorf("--duration must be positive, got %v", duration))
	}
	return errors.Join(errs...)
}

// recorderWatchers is RecordConfig.Watchers for --watchers: the
// recorder reads 0 as its default and a negative count as none, the
// flag 0 as none.
func recorderWatchers(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

// deleteConfigMaps removes the run's ConfigMaps from its namespace (best
// effort, with its own deadline as deleteNamespace).
func deleteConfigMaps(cfg *rest.Config, namespace string, names []string) {
	// No client-side rate limit (client-go's default is 5/s): with it
	// a run with many keys used up the deadline and left ConfigMaps.
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst, cfg.RateLimiter = -1, 0, nil
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, name := range names {
		_ = cs.CoreV1().ConfigMaps(namespace).Delete(ctx, name, metav1.DeleteOptions{})
	}
}

// deleteNamespace removes the namespace the check created (best effort,
// with its own deadline so an interrupted run still cleans up).
func deleteNamespace(cfg *rest.Config, name string) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = cs.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{})
}
