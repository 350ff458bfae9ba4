package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubeproof/kubeproof/model"
	"github.com/kubeproof/kubeproof/model/checker"
)

// newModelCommand is `kubeproof model`: the model checker of the
// specification in spec/ (see spec/README.md).
func newModelCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "model",
		Short: "Check the specification (spec/PodPipeline.tla) with the Go model checker",
	}
	cmd.AddCommand(newModelCheckCommand(), newModelListCommand())
	return cmd
}

func newModelCheckCommand() *cobra.Command {
	var (
		configs   []string
		symmetry  bool
		workers   int
		mutant    string
		maxStates int64
		quiet     bool
		interval  time.Duration
	)
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Explore every reachable state of the bounded configurations and check their properties",
		Long: `Explore every reachable state of each bounded configuration (spec/*.cfg) and check
the invariants and properties the configuration lists: safety on every state and step,
liveness under weak fairness. Without --config the standard configurations run
(` + strings.Join(model.StandardConfigs, ", ") + `), or with --mutant NAME that mutant's own small
configuration (mutant-NAME), where its bug shows. A violation prints the shortest trace, action by
action, with the variables each step changed, and makes the command fail.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkModelFlags(workers, maxStates, interval); err != nil {
				return err
			}
			if mutant != "" {
				// Symmetry reduction is sound only for the specification's
				// own actions (model/encode.go): a broken action may treat
				// nodes, slots or IPs unevenly, and one representative per
				// orbit could then hide its violation.
				if cmd.Flags().Changed("symmetry") && symmetry {
					return errors.New("--symmetry cannot be used with --mutant: a broken action may break the symmetry the reduction relies on")
				}
				symmetry = false
			}
			cfgs, err := loadModelConfigs(configs, mutant)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			var progress io.Writer = cmd.ErrOrStderr()
			if quiet {
				progress = nil
			}
			var results []checker.Result
			var failed []string
			for _, cfg := range cfgs {
				name := cfg.Name
				m, err := model.New(cfg, mutant)
				if err != nil {
					return err
				}
				fmt.Fprintf(out, "checking %s (symmetry %v)\n", name, symmetry)
				r, err := checker.Check(cmd.Context(), m, checker.Options{
					Symmetry: symmetry, Workers: workers, Progress: progress, ProgressInterval: interval, MaxStates: maxStates,
				})
				if err != nil {
					return fmt.Errorf("model check %s: %w", name, err)
				}
				results = append(results, r)
				if r.Violation != nil {
					checker.WriteViolation(out, m, r.Violation)
					failed = append(failed, name+": "+r.Violation.Property)
				}
			}
			fmt.Fprintln(out)
			checker.WriteSummary(out, results)
			for _, r := range results {
				if r.Mutant != "" && r.Violation == nil {
					writeMutantNotCaught(out, r)
				}
			}
			if len(failed) > 0 {
				return errors.New("properties violated: " + strings.Join(failed, "; "))
			}
			return nil
		},
	}
	cmd.Flags().StringSliceVar(&configs, "config", nil, "configuration(s) from spec/*.cfg to check, or \"all\" (default: the standard ones; with --mutant, the mutant's own)")
	cmd.Flags().BoolVar(&symmetry, "symmetry", true, "reduce by node, pod-slot and IP symmetry and order-preserving revision renaming (false: the distinct-state count TLC reports; always false with --mutant)")
	cmd.Flags().IntVar(&workers, "workers", 0, "parallel workers (0: GOMAXPROCS)")
	cmd.Flags().StringVar(&mutant, "mutant", "", "run the deliberately broken variant `NAME` of the model instead of the correct one, without symmetry reduction (see kubeproof model list)")
	cmd.Flags().Int64Var(&maxStates, "max-states", 0, "give up beyond this many distinct states (0: no limit)")
	cmd.Flags().BoolVar(&quiet, "quiet", false, "no progress lines")
	cmd.Flags().DurationVar(&interval, "progress-interval", 5*time.Second, "time between progress lines")
	return cmd
}

// loadModelConfigs returns the configurations model check runs: those
// --config names ("all": every one in spec/), or without --config the
// standard ones, or with --mutant that mutant's own small configuration
// (unreduced, as mutants run, the standard ones take minutes and
// gigabytes). Every configuration is loaded before any is checked, so a
// misspelt name is refused before minutes of checking.
func loadModelConfigs(names []string, mutant string) ([]model.Config, error) {
	switch {
	case len(names) == 0 && mutant != "":
		cfg, err := model.MutantConfig(mutant)
		if err != nil {
			return nil, err
		}
		return []model.Config{cfg}, nil
	case len(names) == 0:
		names = model.StandardConfigs
	case len(names) == 1 && names[0] == "all":
		names = model.ConfigNames()
	}
	cfgs := make([]model.Config, len(names))
	var errs []error
	for i, name := range names {
		var err error
		if cfgs[i], err = model.LoadConfig(name); err != nil {
			errs = append(errs, err)
		}
	}
	return cfgs, errors.Join(errs...)
}

// checkModelFlags refuses the numbers model check has no meaning for
// (model/checker.Options reads 0 workers as GOMAXPROCS, a MaxStates of 0 as
// no limit, and would have read a negative number the same way).
func checkModelFlags(workers int, maxStates int64, interval time.Duration) error {
	var errs []error
	if workers < 0 {
		errs = append(errs, fmt.Errorf("--workers must be 0 (GOMAXPROCS) or more, got %d", workers))
	}
	if maxStates < 0 {
		errs = append(errs, fmt.Errorf("--max-states must be 0 (no limit) or more, got %d", maxStates))
	}
	if interval <= 0 {
		errs = append(errs, fmt.Errorf("--progress-interval must be positive, got %v", interval))
	}
	return errors.Join(errs...)
}

// writeMutantNotCaught says that a mutant's run found no violation. The
// search is exhaustive, so the configuration cannot show that mutant (its
// broken action never runs there, or never where it matters): the "ok" is
// not the checker vouching for the mutant.
func writeMutantNotCaught(w io.Writer, r checker.Result) {
	mi, _ := model.LookupMutant(r.Mutant)
	fmt.Fprintf(w, "warning: mutant %s was not caught in configuration %s: every reachable state was checked, so this configuration cannot show it (it breaks %s: %s)\n",
		r.Mutant, r.Config, mi.Breaks, mi.Describe)
}

func newModelListCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the configurations, properties and mutants",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			fmt.Fprintln(out, "Configurations (spec/*.cfg):")
			for _, n := range model.ConfigNames() {
				fmt.Fprintln(out, "  "+n)
			}
			fmt.Fprintln(out, "Properties:")
			for _, p := range model.Properties {
				fmt.Fprintf(out, "  %-10s %-9s %s\n", p.ID, p.Kind(), p.Text)
			}
			fmt.Fprintln(out, "Mutants (--mutant):")
			for _, mi := range model.Mutants {
				fmt.Fprintf(out, "  %-36s breaks %-9s %s\n", mi.Name, mi.Breaks, mi.Describe)
			}
			return nil
		},
	}
}
