package scheduler

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/scheduler/config"
	"github.com/kubeproof/kubeproof/impl/scheduler/extender"
)

// gpuExtender is an HTTP extender in the style of a device plugin's: it
// filters (node names only), scores and binds. Pod "ranked" may go anywhere
// but it prefers n2; every other pod fits only n3 (n1 is reserved, n2 has no
// GPU); pod "blocked" fits nowhere.
type gpuExtender struct {
	mu    sync.Mutex
	binds []extender.ExtenderBindingArgs
	c     *fakeCluster
}

func (g *gpuExtender) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	verb := strings.TrimPrefix(r.URL.Path, "/gpu/")
	var answer any
	switch verb {
	case "filter":
		var args extender.ExtenderArgs
		_ = json.NewDecoder(r.Body).Decode(&args)
		res := extender.ExtenderFilterResult{FailedNodes: extender.FailedNodesMap{}, FailedAndUnresolvableNodes: extender.FailedNodesMap{}}
		kept := []string{}
		for _, n := range *args.NodeNames {
			switch {
			case args.Pod.Name == "ranked":
				kept = append(kept, n)
			case n == "n2":
				res.FailedAndUnresolvableNodes[n] = "node(s) had no GPU"
			case n == "n3" && args.Pod.Name != "blocked":
				kept = append(kept, n)
			default:
				res.FailedNodes[n] = "node(s) were reserved by the GPU extender"
			}
		}
		res.NodeNames = &kept
		answer = res
	case "prioritize":
		var args extender.ExtenderArgs
		_ = json.NewDecoder(r.Body).Decode(&args)
		var list extender.HostPriorityList
		for _, n := range *args.NodeNames {
			score := int64(0)
			if n == "n2" {
				score = 10
			}
			list = append(list, extender.HostPriority{Host: n, Score: score})
		}
		answer = list
	case "bind":
		var args extender.ExtenderBindingArgs
		_ = json.NewDecoder(r.Body).Decode(&args)
		g.mu.Lock()
		g.binds = append(g.binds, args)
		g.mu.Unlock()
		b := &v1.Binding{ObjectMeta: metav1.ObjectMeta{Namespace: args.PodNamespace, Name: args.PodName, UID: args.PodUID}, Target: v1.ObjectReference{Kind: "Node", Name: args.Node}}
		res := extender.ExtenderBindingResult{}
		if err := g.c.CoreV1().Pods(args.PodNamespace).Bind(r.Context(), b, metav1.CreateOptions{}); err != nil {
			res.Error = err.Error()
		}
		answer = res
	default:
		http.NotFound(w, r)
		return
	}
	_ = json.NewEncoder(w).Encode(answer)
}

func (g *gpuExtender) bound() []extender.ExtenderBindingArgs {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]extender.ExtenderBindingArgs(nil), g.binds...)
}

func TestExtenderFiltersScoresAndBinds(t *testing.T) {
	c := newFakeCluster()
	for _, n := range []string{"n1", "n2", "n3"} {
		createNode(t, c, makeNode(n, "4", "16Gi", 110, nil))
	}
	ext := &gpuExtender{c: c}
	srv := httptest.NewServer(ext)
	defer srv.Close()
	conf := testConfig()
	conf.Extenders = []config.Extender{{
		URLPrefix: srv.URL + "/gpu", FilterVerb: "filter", PrioritizeVerb: "prioritize", Weight: 5, BindVerb: "bind",
		NodeCacheCapable: true,
	}}
	config.SetDefaults(conf)
	if err := config.Validate(conf); err != nil {
		t.Fatal(err)
	}
	startScheduler(t, c, conf)

	createPod(t, c, makePod("default", "picky", "1", "1Gi"))
	createPod(t, c, makePod("default", "ranked", "1", "1Gi"))
	waitFor(t, "picky on n3, the only node the extender kept", func() bool { return getPod(t, c, "default", "picky").Spec.NodeName == "n3" })
	waitFor(t, "ranked on n2, the extender's favourite", func() bool { return getPod(t, c, "default", "ranked").Spec.NodeName == "n2" })
	if got := ext.bound(); len(got) != 2 {
		t.Errorf("extender bound %v, want both pods", got)
	}

	createPod(t, c, makePod("default", "blocked", "1", "1Gi"))
	waitFor(t, "blocked unschedulable with the extender's reasons", func() bool {
		cond := scheduledCondition(getPod(t, c, "default", "blocked"))
		return cond != nil && cond.Status == v1.ConditionFalse && cond.Reason == v1.PodReasonUnschedulable &&
			strings.HasPrefix(cond.Message, "0/3 nodes are available: 1 node(s) had no GPU, 2 node(s) were reserved by the GPU extender.")
	})
}

func TestExtenderConfigurationIsValidated(t *testing.T) {
	for _, tc := range []struct {
		yaml, want string
	}{
		{"extenders: [{filterVerb: f}]", "urlPrefix: required"},
		{"extenders: [{urlPrefix: 'http://x', prioritizeVerb: p}]", "must have a positive weight"},
		{"extenders: [{urlPrefix: 'http://x', bindVerb: b}, {urlPrefix: 'http://y', bindVerb: b}]", "only one extender can implement bind"},
	} {
		_, err := config.Parse([]byte("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n" + tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.yaml, err, tc.want)
		}
	}
	conf, err := config.Parse([]byte("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nextenders: [{urlPrefix: 'http://x', filterVerb: filter, httpTimeout: 2s, managedResources: [{name: example.com/gpu, ignoredByScheduler: true}]}]"))
	if err != nil {
		t.Fatal(err)
	}
	if e := conf.Extenders[0]; e.HTTPTimeout.Seconds() != 2 || e.ManagedResources[0].Name != "example.com/gpu" {
		t.Errorf("parsed %+v", e)
	}
}
