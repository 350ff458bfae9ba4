package bench

import (
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"sigs.k8s.io/yaml"
)

// The scheduling workloads, in scheduler_perf's YAML shape.
//
//go:embed workloads/*.yaml
var workloadFiles embed.FS

// Opcodes of a scheduling workload (scheduler_perf's names).
const (
	OpCreateNodes = "createNodes"
	OpCreatePods  = "createPods"
	OpBarrier     = "barrier"
	OpDeletePods  = "deletePods"
	OpChurn       = "churn"
)

// SchedulingTestCase is one test case of a workload file: templates, a
// list of opcodes with $parameters, and named parameter sets.
type SchedulingTestCase struct {
	Name         string       `json:"name"`
	NodeTemplate *corev1.Node `json:"nodeTemplate"`
	PodTemplate  *corev1.Pod  `json:"podTemplate"`
	// PriorityClasses are created before the first op (kubeproof's API
	// server runs the Priority admission plugin, so pod templates name a
	// class instead of setting spec.priority as scheduler_perf's do).
	PriorityClasses  []schedulingv1.PriorityClass `json:"priorityClasses,omitempty"`
	WorkloadTemplate []Op                         `json:"workloadTemplate"`
	Workloads        []namedWorkload              `json:"workloads"`
}

type namedWorkload struct {
	Name   string         `json:"name"`
	Params map[string]any `json:"params"`
}

// Op is one step of a workload. Count or CountParam ("$name") gives the
// number of objects; Rate and Duration/DurationParam drive churn.
type Op struct {
	Opcode         string `json:"opcode"`
	Count          int    `json:"count,omitempty"`
	CountParam     string `json:"countParam,omitempty"`
	CollectMetrics bool   `json:"collectMetrics,omitempty"`
	Rate           int    `json:"rate,omitempty"`
	Duration       string `json:"duration,omitempty"`
	DurationParam  string `json:"durationParam,omitempty"`
	// PodTemplate, on createPods and churn, replaces the test case's.
	PodTemplate *corev1.Pod `json:"podTemplate,omitempty"`
}

// SchedulingWorkload is a test case with its parameters resolved: what
// RunScheduling executes.
type SchedulingWorkload struct {
	// Name is "TestCase/Workload", e.g. "SchedulingBasic/500Nodes_1000Pods".
	Name            string
	NodeTemplate    *corev1.Node
	PodTemplate     *corev1.Pod
	PriorityClasses []schedulingv1.PriorityClass
	Ops             []ResolvedOp
}

// ResolvedOp is an Op with its parameters substituted.
type ResolvedOp struct {
	Opcode         string
	Count          int
	CollectMetrics bool
	Rate           int
	Duration       time.Duration
	// PodTemplate is the pod createPods and churn create.
	PodTemplate *corev1.Pod
}

// ParseSchedulingWorkloads parses a workload file and resolves every named
// workload in it.
func ParseSchedulingWorkloads(data []byte) ([]SchedulingWorkload, error) {
	var cases []SchedulingTestCase
	if err := yaml.UnmarshalStrict(data, &cases); err != nil {
		return nil, fmt.Errorf("parsing scheduling workloads: %w", err)
	}
	var out []SchedulingWorkload
	for _, tc := range cases {
		if tc.NodeTemplate == nil || tc.PodTemplate == nil {
			return nil, fmt.Errorf("test case %s: nodeTemplate and podTemplate are required", tc.Name)
		}
		for _, w := range tc.Workloads {
			sw := SchedulingWorkload{Name: tc.Name + "/" + w.Name, NodeTemplate: tc.NodeTemplate, PodTemplate: tc.PodTemplate, PriorityClasses: tc.PriorityClasses}
			for i, op := range tc.WorkloadTemplate {
				r, err := resolveOp(op, w.Params)
				if err != nil {
					return nil, fmt.Errorf("workload %s, op %d (%s): %w", sw.Name, i, op.Opcode, err)
				}
				if r.PodTemplate == nil {
					r.PodTemplate = tc.PodTemplate
				}
				sw.Ops = append(sw.Ops, r)
			}
			out = append(out, sw)
		}
	}
	return out, nil
}

func resolveOp(op Op, params map[string]any) (ResolvedOp, error) {
	r := ResolvedOp{Opcode: op.Opcode, Count: op.Count, CollectMetrics: op.CollectMetrics, Rate: op.Rate, PodTemplate: op.PodTemplate}
	if op.CountParam != "" {
		v, ok := params[strings.TrimPrefix(op.CountParam, "$")]
		if !ok {
			return r, fmt.Errorf("parameter %s not set", op.CountParam)
		}
		n, ok := v.(float64) // JSON numbers
		if !ok || n < 0 || n != float64(int(n)) {
			return r, fmt.Errorf("parameter %s = %v is not a count", op.CountParam, v)
		}
		r.Count = int(n)
	}
	d := op.Duration
	if op.DurationParam != "" {
		v, ok := params[strings.TrimPrefix(op.DurationParam, "$")].(string)
		if !ok {
			return r, fmt.Errorf("parameter %s is not a duration string", op.DurationParam)
		}
		d = v
	}
	if d != "" {
		var err error
		if r.Duration, err = time.ParseDuration(d); err != nil {
			return r, err
		}
	}
	switch op.Opcode {
	case OpCreateNodes, OpCreatePods, OpDeletePods:
		if r.Count <= 0 {
			return r, fmt.Errorf("count must be positive")
		}
	case OpChurn:
		if r.Count <= 0 || r.Rate <= 0 || r.Duration <= 0 {
			return r, fmt.Errorf("churn needs a positive count, rate and duration")
		}
	case OpBarrier:
	default:
		return r, fmt.Errorf("unknown opcode %q", op.Opcode)
	}
	return r, nil
}

// SchedulingWorkloads returns every built-in workload (bench/workloads/*.yaml).
func SchedulingWorkloads() ([]SchedulingWorkload, error) {
	files, err := fs.Glob(workloadFiles, "workloads/*.yaml")
	if err != nil {
		return nil, err
	}
	var all []SchedulingWorkload
	for _, f := range files {
		data, err := workloadFiles.ReadFile(f)
		if err != nil {
			return nil, err
		}
		ws, err := ParseSchedulingWorkloads(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		all = append(all, ws...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Name < all[j].Name })
	return all, nil
}

// SchedulingWorkloadByName returns the built-in workload name
// ("SchedulingBasic/500Nodes_1000Pods").
func SchedulingWorkloadByName(name string) (SchedulingWorkload, error) {
	all, err := SchedulingWorkloads()
	if err != nil {
		return SchedulingWorkload{}, err
	}
	var names []string
	for _, w := range all {
		if w.Name == name {
			return w, nil
		}
		names = append(names, w.Name)
	}
	return SchedulingWorkload{}, fmt.Errorf("no scheduling workload %q (have %s)", name, strings.Join(names, ", "))
}
