package model

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/kubeproof/kubeproof/spec"
)

// Config is one bounded configuration of the specification: the CONSTANTS,
// INVARIANTS and PROPERTIES sections of a spec/*.cfg file (the same file TLC
// reads).
type Config struct {
	Name string // file name without .cfg

	NumNodes       int // nodes 1..NumNodes, all alike (capacity, IP pool)
	NumDeployments int // deployments 1..NumDeployments
	Replicas       int // spec.replicas a deployment is created with
	NumVersions    int // template versions 1..NumVersions (NumVersions-1 rolling updates)
	MaxSurge       int // deployment strategy, absolute numbers
	MaxUnavailable int
	PodsPerRS      int // pod name slots per ReplicaSet
	Capacity       int // pods a node can hold (every pod requests one unit)
	IPsPerNode     int // size of a node's pod IP pool

	MaxScales       int // user scale operations, in total
	MaxDeletes      int // user deployment deletions, in total
	MaxCrashes      int // component crashes (controllers, scheduler, kubelets), in total
	MaxWatchDrops   int // dropped watches, in total
	MaxNodeFailures int // node failures, in total
	MaxEvictions    int // kubelet node-pressure evictions, in total

	// Features beyond the core pipeline; 0 turns each off, so a
	// configuration pays in states only for what it exercises.
	TrackRevisions      int // 1: the store keeps its global revision counter (every write's resourceVersion); watch events carry it
	MaxLag              int // watch events a component may hold undelivered (0: caches follow every write at once)
	JoiningNodes        int // the last JoiningNodes nodes start unregistered and join (NodeJoin)
	MaxNodeDeletes      int // node deletions (NodeDelete), in total
	LabeledNodes        int // nodes 1..LabeledNodes carry the label the nodeSelector asks for
	SelectorDeployments int // deployments 1..SelectorDeployments have a nodeSelector in their pod template
	ReadinessProbes     int // 1: containers have a readiness probe (Ready only after it passes)
	MaxProbeFailures    int // readiness probe failures of running containers, in total
	RestartPolicy       int // of the pod template: 0 Always, 1 OnFailure, 2 Never
	MaxCompletions      int // containers that exit 0 (run to completion), in total
	KubeletLag          int // 1: each kubelet acts on its own lagging view of the pods bound to its node (kubeletView)
	DeploymentLag       int // 1: the deployment controller counts availability from its own lagging view (dcAvailable)
	NodeLifecycleLag    int // 1: taint-based eviction reads its own lagging view of node taints (nlcTainted)
	NodesReturn         int // 1: a deleted node may register again under its name (NodeJoin of a Gone node)
	GCLag               int // 1: the garbage collector's foreground finalizer removal reads its own lagging graph of the pods (gcGraph)

	// Invariants and Properties are the property IDs to check (e.g. "SCHED-2",
	// "LIVE-1"), translated from the TLA+ operator names (SCHED_2, LIVE_1).
	Invariants []string
	Properties []string
}

// constantFields maps each TLA+ CONSTANT name to its Config field.
func (c *Config) constantFields() map[string]*int {
	return map[string]*int{
		"NumNodes": &c.NumNodes, "NumDeployments": &c.NumDeployments, "Replicas": &c.Replicas,
		"NumVersions": &c.NumVersions, "MaxSurge": &c.MaxSurge, "MaxUnavailable": &c.MaxUnavailable,
		"PodsPerRS": &c.PodsPerRS, "Capacity": &c.Capacity, "IPsPerNode": &c.IPsPerNode,
		"MaxScales": &c.MaxScales, "MaxDeletes": &c.MaxDeletes, "MaxCrashes": &c.MaxCrashes,
		"MaxWatchDrops": &c.MaxWatchDrops, "MaxNodeFailures": &c.MaxNodeFailures, "MaxEvictions": &c.MaxEvictions,
		"TrackRevisions": &c.TrackRevisions, "MaxLag": &c.MaxLag, "JoiningNodes": &c.JoiningNodes,
		"MaxNodeDeletes": &c.MaxNodeDeletes, "LabeledNodes": &c.LabeledNodes, "SelectorDeployments": &c.SelectorDeployments,
		"ReadinessProbes": &c.ReadinessProbes, "MaxProbeFailures": &c.MaxProbeFailures,
		"RestartPolicy": &c.RestartPolicy, "MaxCompletions": &c.MaxCompletions,
		"KubeletLag": &c.KubeletLag, "DeploymentLag": &c.DeploymentLag, "NodeLifecycleLag": &c.NodeLifecycleLag,
		"NodesReturn": &c.NodesReturn, "GCLag": &c.GCLag,
	}
}

// Limits of the Go state layout (fixed-size arrays keep State comparable and
// cheap to copy).
const (
	MaxNodes       = 3
	MaxDeployments = 2
	MaxVersions    = 2
	MaxPodsPerRS   = 4
	MaxPods        = MaxDeployments * MaxVersions * MaxPodsPerRS
	MaxIPs         = 7
)

// ParseConfig reads a TLC configuration file. Only the sections the model
// uses are understood: SPECIFICATION, CONSTANTS (NAME = integer), INVARIANTS,
// INVARIANT, PROPERTIES, PROPERTY, SYMMETRY (ignored: symmetry is a flag of
// the Go checker). Every constant must be given.
func ParseConfig(name, text string) (Config, error) {
	c := Config{Name: name}
	fields := c.constantFields()
	seen := map[string]bool{}
	section := ""
	sc := bufio.NewScanner(strings.NewReader(text))
	for line := 1; sc.Scan(); line++ {
		l := sc.Text()
		if i := strings.Index(l, "\\*"); i >= 0 {
			l = l[:i]
		}
		words := strings.Fields(l)
		for len(words) > 0 {
			switch words[0] {
			case "SPECIFICATION", "CONSTANTS", "CONSTANT", "INVARIANTS", "INVARIANT", "PROPERTIES", "PROPERTY", "SYMMETRY", "CHECK_DEADLOCK":
				section = words[0]
				words = words[1:]
				if section == "SPECIFICATION" || section == "SYMMETRY" || section == "CHECK_DEADLOCK" {
					words = nil // one argument, not needed by the Go checker
				}
				continue
			}
			switch section {
			case "CONSTANTS", "CONSTANT":
				// NAME = value, possibly written NAME=value.
				joined := strings.Join(words, "")
				k, v, ok := strings.Cut(joined, "=")
				if !ok {
					return c, fmt.Errorf("%s.cfg:%d: want NAME = integer, got %q", name, line, l)
				}
				f, known := fields[k]
				if !known {
					return c, fmt.Errorf("%s.cfg:%d: unknown constant %q", name, line, k)
				}
				n, err := strconv.Atoi(v)
				if err != nil {
					return c, fmt.Errorf("%s.cfg:%d: constant %s: %w", name, line, k, err)
				}
				*f = n
				seen[k] = true
			case "INVARIANTS", "INVARIANT":
				for _, w := range words {
					if w != "TypeOK" {
						c.Invariants = append(c.Invariants, idFromOperator(w))
					}
				}
			case "PROPERTIES", "PROPERTY":
				for _, w := range words {
					c.Properties = append(c.Properties, idFromOperator(w))
				}
			default:
				return c, fmt.Errorf("%s.cfg:%d: text outside a section: %q", name, line, l)
			}
			words = nil
		}
	}
	for k := range fields {
		if !seen[k] {
			return c, fmt.Errorf("%s.cfg: constant %s not given", name, k)
		}
	}
	return c, c.Validate()
}

// idFromOperator turns a TLA+ operator name (SCHED_2) into a property ID (SCHED-2).
func idFromOperator(op string) string { return strings.Replace(op, "_", "-", 1) }

// OperatorFromID turns a property ID (SCHED-2) into its TLA+ operator name (SCHED_2).
func OperatorFromID(id string) string { return strings.Replace(id, "-", "_", 1) }

// Validate checks the bounds against the Go state layout.
func (c Config) Validate() error {
	check := func(name string, v, lo, hi int) error {
		if v < lo || v > hi {
			return fmt.Errorf("config %s: %s = %d, want %d..%d", c.Name, name, v, lo, hi)
		}
		return nil
	}
	for _, e := range []error{
		check("NumNodes", c.NumNodes, 1, MaxNodes),
		check("NumDeployments", c.NumDeployments, 1, MaxDeployments),
		check("NumVersions", c.NumVersions, 1, MaxVersions),
		check("PodsPerRS", c.PodsPerRS, 1, MaxPodsPerRS),
		check("Replicas", c.Replicas, 0, c.PodsPerRS),
		check("MaxSurge", c.MaxSurge, 0, 9),
		check("MaxUnavailable", c.MaxUnavailable, 0, 9),
		check("Capacity", c.Capacity, 0, MaxPods),
		check("IPsPerNode", c.IPsPerNode, 0, MaxIPs),
		check("MaxScales", c.MaxScales, 0, 9),
		check("MaxDeletes", c.MaxDeletes, 0, 9),
		check("MaxCrashes", c.MaxCrashes, 0, 9),
		check("MaxWatchDrops", c.MaxWatchDrops, 0, 9),
		check("MaxNodeFailures", c.MaxNodeFailures, 0, 9),
		check("MaxEvictions", c.MaxEvictions, 0, 9),
		check("TrackRevisions", c.TrackRevisions, 0, 1),
		check("MaxLag", c.MaxLag, 0, MaxLagLimit),
		check("JoiningNodes", c.JoiningNodes, 0, c.NumNodes-1),
		check("MaxNodeDeletes", c.MaxNodeDeletes, 0, 9),
		check("LabeledNodes", c.LabeledNodes, 0, c.NumNodes),
		check("SelectorDeployments", c.SelectorDeployments, 0, c.NumDeployments),
		check("ReadinessProbes", c.ReadinessProbes, 0, 1),
		check("MaxProbeFailures", c.MaxProbeFailures, 0, 9),
		check("RestartPolicy", c.RestartPolicy, RestartAlways, RestartNever),
		check("MaxCompletions", c.MaxCompletions, 0, 9),
		check("KubeletLag", c.KubeletLag, 0, 1),
		check("DeploymentLag", c.DeploymentLag, 0, 1),
		check("NodeLifecycleLag", c.NodeLifecycleLag, 0, 1),
		check("NodesReturn", c.NodesReturn, 0, 1),
		check("GCLag", c.GCLag, 0, 1),
	} {
		if e != nil {
			return e
		}
	}
	if c.MaxSurge == 0 && c.MaxUnavailable == 0 {
		return fmt.Errorf("config %s: MaxSurge and MaxUnavailable are both 0 (Kubernetes rejects this)", c.Name)
	}
	for _, id := range append(append([]string{}, c.Invariants...), c.Properties...) {
		if _, ok := propertyByID[id]; !ok {
			return fmt.Errorf("config %s: unknown property %s", c.Name, id)
		}
	}
	return nil
}

// LoadConfig returns the named configuration from spec/*.cfg. An unknown
// name's error lists the configurations there are.
func LoadConfig(name string) (Config, error) {
	b, err := fs.ReadFile(spec.Configs, name+".cfg")
	if errors.Is(err, fs.ErrNotExist) {
		return Config{}, fmt.Errorf("loading configuration %s: no spec/%s.cfg; the configurations are %s: %w",
			name, name, strings.Join(ConfigNames(), ", "), err)
	}
	if err != nil {
		return Config{}, fmt.Errorf("loading configuration %s: %w", name, err)
	}
	return ParseConfig(name, string(b))
}

// ConfigNames lists the configurations in spec/*.cfg, sorted.
func ConfigNames() []string {
	entries, _ := fs.Glob(spec.Configs, "*.cfg")
	var names []string
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(path.Base(e), ".cfg"))
	}
	sort.Strings(names)
	return names
}

// StandardConfigs are the configurations `kubeproof model check` and
// `make model` run by default.
var StandardConfigs = []string{"RollingUpdate", "RollingUpdateLag", "NodeFailure", "Features", "Revisions", "Deletion"}
