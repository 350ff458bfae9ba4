package fuzz

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubeproof/kubeproof/impl/scheduler"
	"github.com/kubeproof/kubeproof/impl/scheduler/config"
	fw "github.com/kubeproof/kubeproof/impl/scheduler/framework"
	"github.com/kubeproof/kubeproof/impl/scheduler/testutil"
	"github.com/kubeproof/kubeproof/impl/scheduler/testutil/fwtest"
)

// schedConfigHeader starts every KubeSchedulerConfiguration the target
// builds around the fuzzer's bytes.
const schedConfigHeader = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"

// schedConfigPoints are the extension points a profile's plugins list.
var schedConfigPoints = []string{"multiPoint", "preEnqueue", "queueSort", "preFilter", "filter", "postFilter",
	"preScore", "score", "reserve", "permit", "preBind", "bind", "postBind"}

// schedConfigKeys are top-level fields given the fuzzer's value.
var schedConfigKeys = []string{"parallelism", "percentageOfNodesToScore", "podInitialBackoffSeconds",
	"podMaxBackoffSeconds", "leaderElection", "clientConnection", "profiles", "extenders", "apiVersion", "kind"}

// FuzzSchedulerConfig feeds `kubeproof scheduler --config FILE` random and
// mutated KubeSchedulerConfiguration documents: the fuzzer's bytes as the
// whole file, after the apiVersion/kind header, as one plugin's args in a
// profile's pluginConfig (every in-tree plugin by name, and unknown ones),
// as a profile's plugin set at one extension point, as a top-level field's
// value, or as the extenders list. Properties: decoding (config.Parse)
// gives an error or a configuration, never a panic or a hang; an accepted
// configuration builds a scheduler (scheduler.New, on a fake client) or is
// refused with an error, never a panic; and every profile of a scheduler
// that was built schedules a pod over a small cluster (three zoned nodes,
// pods on two of them) without a panic, onto one of its nodes or with an
// error.
func FuzzSchedulerConfig(f *testing.F) {
	args := []string{"", "{}", "null", "[]", `{"scoringStrategy":{"type":"RequestedToCapacityRatio","resources":[{"name":"cpu","weight":0}],"requestedToCapacityRatio":{"shape":[]}}}`,
		`{"scoringStrategy":{"type":"MostAllocated","resources":[]}}`, `{"scoringStrategy":{"type":"LeastAllocated","resources":[{"name":"memory","weight":-1}]}}`,
		`{"defaultingType":"List","defaultConstraints":[{"maxSkew":0,"topologyKey":"","whenUnsatisfiable":"DoNotSchedule"}]}`,
		`{"hardPodAffinityWeight":101}`, `{"minCandidateNodesPercentage":0,"minCandidateNodesAbsolute":0}`, `{"resources":[{"name":"cpu","weight":0}]}`}
	for i := range config.DefaultMultiPoint {
		for j, a := range args {
			if (i+j)%3 == 0 {
				f.Add(byte(2), byte(i), []byte(a))
			}
		}
	}
	for i := range schedConfigPoints {
		f.Add(byte(3), byte(i), []byte(`{"enabled":[{"name":"NodeResourcesFit","weight":0}],"disabled":[{"name":"*"}]}`))
	}
	for i := range schedConfigKeys {
		f.Add(byte(4), byte(i), []byte("-1"))
	}
	f.Add(byte(0), byte(0), []byte(schedConfigHeader))
	f.Add(byte(1), byte(0), []byte("profiles:\n- schedulerName: a\n- schedulerName: b\n  percentageOfNodesToScore: 100\n"))
	f.Add(byte(1), byte(0), []byte("leaderElection:\n  leaseDuration: -1s\n"))
	f.Add(byte(5), byte(0), []byte(`[{"urlPrefix":"http://127.0.0.1:1","filterVerb":"filter","httpTimeout":"-1s","managedResources":[{"name":""}]}]`))
	f.Add(byte(5), byte(0), []byte(`[{"urlPrefix":"%zz","bindVerb":"bind","tlsConfig":{"caData":"AAAA","certData":"eA=="}}]`))
	f.Fuzz(func(t *testing.T, mode, pick byte, data []byte) {
		doc := schedConfigDocument(mode, pick, string(data))
		done := make(chan struct{})
		var failure string
		go func() {
			defer close(done)
			defer func() {
				if p := recover(); p != nil {
					failure = fmt.Sprintf("panic: %v", p)
				}
			}()
			failure = checkSchedulerConfig(doc)
		}()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatalf("did not return in 20s\n%s", doc)
		}
		if failure != "" {
			t.Fatalf("%s\nconfiguration:\n%s", failure, doc)
		}
	})
}

// schedConfigDocument builds the configuration file of one input (see
// FuzzSchedulerConfig).
func schedConfigDocument(mode, pick byte, data string) string {
	indented := strings.ReplaceAll(data, "\n", "\n      ")
	switch mode % 6 {
	case 0:
		return data
	case 1:
		return schedConfigHeader + data
	case 2:
		name := "Unknown"
		if i := int(pick) % (len(config.DefaultMultiPoint) + 1); i < len(config.DefaultMultiPoint) {
			name = config.DefaultMultiPoint[i].Name
		}
		return schedConfigHeader + "profiles:\n- schedulerName: fuzz\n  pluginConfig:\n  - name: " + name + "\n    args: " + indented + "\n"
	case 3:
		point := schedConfigPoints[int(pick)%len(schedConfigPoints)]
		return schedConfigHeader + "profiles:\n- plugins:\n    " + point + ": " + indented + "\n"
	case 4:
		return schedConfigHeader + schedConfigKeys[int(pick)%len(schedConfigKeys)] + ": " + indented + "\n"
	default:
		return schedConfigHeader + "extenders: " + indented + "\n"
	}
}

// checkSchedulerConfig decodes doc, builds a scheduler from it and
// schedules a pod with each profile; it returns what went wrong, or "".
func checkSchedulerConfig(doc string) string {
	conf, err := config.Parse([]byte(doc))
	if err != nil {
		if err.Error() == "" {
			return "refused with an empty error"
		}
		return ""
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logger := slog.New(slog.DiscardHandler)
	if _, err := scheduler.New(ctx, fake.NewClientset(), scheduler.Config{Configuration: conf, Logger: logger, Seed: 1}); err != nil {
		return ""
	}
	nodes, existing, pod := schedConfigCluster()
	for _, p := range conf.Profiles {
		fwk, snap, err := fwtest.New(existing, nodes, &p)
		if err != nil {
			return fmt.Sprintf("scheduler built, profile %q refused: %v", p.SchedulerName, err)
		}
		pct := *conf.PercentageOfNodesToScore
		if p.PercentageOfNodesToScore != nil {
			pct = *p.PercentageOfNodesToScore
		}
		res, err := scheduler.NewAlgorithm(pct, 1).SchedulePod(ctx, fwk, fw.NewCycleState(), pod.DeepCopy(), snap)
		if err == nil && !slices.ContainsFunc(nodes, func(n *v1.Node) bool { return n.Name == res.SuggestedHost }) {
			return fmt.Sprintf("profile %q chose %q, not a node", p.SchedulerName, res.SuggestedHost)
		}
		var fitErr *fw.FitError
		if err != nil && !errors.As(err, &fitErr) && err.Error() == "" {
			return fmt.Sprintf("profile %q failed with an empty error", p.SchedulerName)
		}
	}
	return ""
}

// schedConfigCluster is three nodes in two zones, pods on two of them
// (labelled, with requests) and a pending pod that requests resources and
// spreads across zones and nodes.
func schedConfigCluster() ([]*v1.Node, []*v1.Pod, *v1.Pod) {
	nodes := []*v1.Node{
		testutil.Node("n1").Capacity("cpu", "4", "memory", "8Gi", "pods", "10").Label(v1.LabelTopologyZone, "a").Label(v1.LabelHostname, "n1").Obj(),
		testutil.Node("n2").Capacity("cpu", "2", "memory", "4Gi", "pods", "10").Label(v1.LabelTopologyZone, "a").Label(v1.LabelHostname, "n2").Obj(),
		testutil.Node("n3").Capacity("cpu", "8", "memory", "16Gi", "pods", "10").Label(v1.LabelTopologyZone, "b").Label(v1.LabelHostname, "n3").
			Taint("dedicated", "x", v1.TaintEffectPreferNoSchedule).Obj(),
	}
	existing := []*v1.Pod{
		testutil.Pod("e1").Node("n1").Req("cpu", "1", "memory", "1Gi").Label("app", "web").Obj(),
		testutil.Pod("e2").Node("n2").Req("cpu", "1500m", "memory", "3Gi").Label("app", "db").Priority(-5).Obj(),
	}
	pod := testutil.Pod("p").Req("cpu", "1", "memory", "1Gi").Label("app", "web").Priority(10).
		Spread(1, v1.LabelTopologyZone, v1.ScheduleAnyway, "app", "web").
		Spread(1, v1.LabelHostname, v1.DoNotSchedule, "app", "web").Obj()
	return nodes, existing, pod
}
