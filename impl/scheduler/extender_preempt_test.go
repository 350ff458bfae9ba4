package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/scheduler/config"
	"github.com/kubeproof/kubeproof/impl/scheduler/extender"
)

// preemptExtender answers the preempt verb with answer, recording what it
// was sent.
type preemptExtender struct {
	mu     sync.Mutex
	got    []extender.ExtenderPreemptionArgs
	answer func(args extender.ExtenderPreemptionArgs) extender.ExtenderPreemptionResult
}

func (e *preemptExtender) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/ext/preempt" {
		http.NotFound(w, r)
		return
	}
	var args extender.ExtenderPreemptionArgs
	if err := json.NewDecoder(r.Body).Decode(&args); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	e.mu.Lock()
	e.got = append(e.got, args)
	e.mu.Unlock()
	_ = json.NewEncoder(w).Encode(e.answer(args))
}

func (e *preemptExtender) calls() []extender.ExtenderPreemptionArgs {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]extender.ExtenderPreemptionArgs(nil), e.got...)
}

// victimNames maps each node of the args to its victims' names (or UIDs,
// for node-cache-capable extenders), sorted.
func victimNames(args extender.ExtenderPreemptionArgs) map[string]string {
	out := map[string]string{}
	for node, v := range args.NodeNameToVictims {
		var names []string
		for _, p := range v.Pods {
			names = append(names, p.Name)
		}
		sort.Strings(names)
		out[node] = strings.Join(names, ",")
	}
	for node, v := range args.NodeNameToMetaVictims {
		var uids []string
		for _, p := range v.Pods {
			uids = append(uids, p.UID)
		}
		sort.Strings(uids)
		out[node] = strings.Join(uids, ",")
	}
	return out
}

// keepOnly answers with the given node's victims only, by UID.
func keepOnly(node string) func(extender.ExtenderPreemptionArgs) extender.ExtenderPreemptionResult {
	return func(args extender.ExtenderPreemptionArgs) extender.ExtenderPreemptionResult {
		res := extender.ExtenderPreemptionResult{NodeNameToMetaVictims: map[string]*extender.MetaVictims{}}
		if v, ok := args.NodeNameToMetaVictims[node]; ok {
			res.NodeNameToMetaVictims[node] = v
		}
		if v, ok := args.NodeNameToVictims[node]; ok {
			mv := &extender.MetaVictims{NumPDBViolations: v.NumPDBViolations}
			for _, p := range v.Pods {
				mv.Pods = append(mv.Pods, &extender.MetaPod{UID: string(p.UID)})
			}
			res.NodeNameToMetaVictims[node] = mv
		}
		return res
	}
}

// TestExtenderPreemptVerb: node-a holds two priority-1 pods, node-b two
// priority-50 pods; the plugin alone would preempt on node-a. An extender
// with a preempt verb decides instead.
func TestExtenderPreemptVerb(t *testing.T) {
	unknownPod := func(extender.ExtenderPreemptionArgs) extender.ExtenderPreemptionResult {
		return extender.ExtenderPreemptionResult{NodeNameToMetaVictims: map[string]*extender.MetaVictims{
			"node-b": {Pods: []*extender.MetaPod{{UID: "no-such-uid"}}}}}
	}
	noVictims := func(extender.ExtenderPreemptionArgs) extender.ExtenderPreemptionResult {
		return extender.ExtenderPreemptionResult{NodeNameToMetaVictims: map[string]*extender.MetaVictims{"node-b": {}}}
	}
	tests := []struct {
		name           string
		cacheCapable   bool
		ignorable      bool
		answer         func(extender.ExtenderPreemptionArgs) extender.ExtenderPreemptionResult
		wantNominated  string // "" = preemption fails, nothing deleted
		wantDeleted    string // prefix of the deleted pods' names
		wantMessageSub string
	}{
		{name: "node-cache capable: victims by UID, extender keeps node-b", cacheCapable: true, answer: keepOnly("node-b"), wantNominated: "node-b", wantDeleted: "mid-"},
		{name: "pods sent, extender keeps node-b", answer: keepOnly("node-b"), wantNominated: "node-b", wantDeleted: "mid-"},
		{name: "extender keeps node-a", answer: keepOnly("node-a"), wantNominated: "node-a", wantDeleted: "low-"},
		{name: "extender keeps no node", answer: keepOnly("node-z"), wantMessageSub: "no candidate node for preemption"},
		{name: "unknown victim fails preemption", answer: unknownPod, wantMessageSub: "0/2 nodes are available: 2 Insufficient cpu."},
		{name: "unknown victim from an ignorable extender is ignored", ignorable: true, answer: unknownPod, wantNominated: "node-a", wantDeleted: "low-"},
		{name: "node without victims fails preemption", answer: noVictims, wantMessageSub: "0/2 nodes are available: 2 Insufficient cpu."},
		{name: "node without victims from an ignorable extender is dropped", ignorable: true, answer: noVictims, wantMessageSub: "no candidate node for preemption"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newFakeCluster()
			createNode(t, c, makeNode("node-a", "2", "16Gi", 110, nil))
			createNode(t, c, makeNode("node-b", "2", "16Gi", 110, nil))
			low, mid := int32(1), int32(50)
			for i := 0; i < 2; i++ {
				p := makePod("default", fmt.Sprintf("low-%d", i), "1", "1Gi")
				p.Spec.Priority, p.Spec.NodeName = &low, "node-a"
				createPod(t, c, p)
				q := makePod("default", fmt.Sprintf("mid-%d", i), "1", "1Gi")
				q.Spec.Priority, q.Spec.NodeName = &mid, "node-b"
				createPod(t, c, q)
			}
			ext := &preemptExtender{answer: tt.answer}
			srv := httptest.NewServer(ext)
			defer srv.Close()
			conf := testConfig()
			conf.Extenders = []config.Extender{{URLPrefix: srv.URL + "/ext", PreemptVerb: "preempt", NodeCacheCapable: tt.cacheCapable, Ignorable: tt.ignorable}}
			config.SetDefaults(conf)
			startScheduler(t, c, conf)
			high := int32(100)
			hp := makePod("default", "high", "2", "1Gi")
			hp.Spec.Priority = &high
			createPod(t, c, hp)

			if tt.wantNominated != "" {
				waitFor(t, "high nominated to "+tt.wantNominated, func() bool {
					return c.nominatedTo("default", "high") == tt.wantNominated
				})
				waitFor(t, "victims deleted", func() bool {
					pods, _ := c.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{})
					for _, p := range pods.Items {
						if strings.HasPrefix(p.Name, tt.wantDeleted) {
							return false
						}
					}
					return len(pods.Items) == 3
				})
			} else {
				waitFor(t, "high unschedulable: "+tt.wantMessageSub, func() bool {
					cond := scheduledCondition(getPod(t, c, "default", "high"))
					return cond != nil && cond.Reason == v1.PodReasonUnschedulable && strings.Contains(cond.Message, tt.wantMessageSub)
				})
				if pods, _ := c.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{}); len(pods.Items) != 5 {
					t.Errorf("%d pods left, want all 5 (no victim deleted)", len(pods.Items))
				}
			}
			calls := ext.calls()
			if len(calls) == 0 {
				t.Fatal("the extender's preempt verb was never called")
			}
			args := calls[0]
			if args.Pod == nil || args.Pod.Name != "high" {
				t.Errorf("preempt call for pod %v, want high", args.Pod)
			}
			want := map[string]string{"node-a": "low-0,low-1", "node-b": "mid-0,mid-1"}
			if tt.cacheCapable {
				want = map[string]string{"node-a": "default-low-0,default-low-1", "node-b": "default-mid-0,default-mid-1"}
				if args.NodeNameToVictims != nil {
					t.Error("a node-cache-capable extender was sent pods")
				}
			} else if args.NodeNameToMetaVictims != nil {
				t.Error("an extender that is not node-cache capable was sent UIDs")
			}
			if got := victimNames(args); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("extender was sent victims %v, want %v", got, want)
			}
		})
	}
}
