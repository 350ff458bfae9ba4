package scheduler

import (
	"context"
	"testing"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// servePDBs makes the fake cluster's discovery list policy/v1
// poddisruptionbudgets, as a kube-apiserver's does.
func servePDBs(c *fakeCluster) {
	c.Resources = append(c.Resources, &metav1.APIResourceList{
		GroupVersion: "policy/v1",
		APIResources: []metav1.APIResource{{Name: "poddisruptionbudgets", Namespaced: true, Kind: "PodDisruptionBudget"}},
	})
}

func TestPreemptionAvoidsEvictionsAPodDisruptionBudgetForbids(t *testing.T) {
	for _, served := range []bool{true, false} {
		t.Run(map[bool]string{true: "budgets served", false: "budgets not served"}[served], func(t *testing.T) {
			c := newFakeCluster()
			if served {
				servePDBs(c)
			}
			createNode(t, c, makeNode("node-a", "4", "16Gi", 110, nil))
			createNode(t, c, makeNode("node-b", "4", "16Gi", 110, nil))
			// node-a runs a lower-priority pod than node-b, so without a
			// budget node-a is the better node to preempt on.
			low, mid := int32(1), int32(50)
			db := makePod("default", "db", "4", "1Gi")
			db.Labels, db.Spec.Priority, db.Spec.NodeName = map[string]string{"app": "db"}, &low, "node-a"
			batch := makePod("default", "batch", "4", "1Gi")
			batch.Labels, batch.Spec.Priority, batch.Spec.NodeName = map[string]string{"app": "batch"}, &mid, "node-b"
			createPod(t, c, db)
			createPod(t, c, batch)
			budget := &policyv1.PodDisruptionBudget{
				ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db"},
				Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}},
				Status:     policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 0, CurrentHealthy: 1, DesiredHealthy: 1, ExpectedPods: 1},
			}
			if _, err := c.PolicyV1().PodDisruptionBudgets("default").Create(context.Background(), budget, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			startScheduler(t, c, testConfig())

			high := int32(100)
			hp := makePod("default", "high", "2", "1Gi")
			hp.Spec.Priority = &high
			createPod(t, c, hp)
			want, evicted := "node-b", "batch"
			if !served {
				want, evicted = "node-a", "db"
			}
			waitFor(t, "high nominated to "+want, func() bool { return c.nominatedTo("default", "high") == want })
			if _, err := c.CoreV1().Pods("default").Get(context.Background(), evicted, metav1.GetOptions{}); err == nil {
				t.Errorf("%s was not evicted", evicted)
			}
			waitFor(t, "high bound to "+want, func() bool { return getPod(t, c, "default", "high").Spec.NodeName == want })
			if p := getPod(t, c, "default", map[bool]string{true: "db", false: "batch"}[served]); p.Spec.NodeName == "" {
				t.Errorf("%s lost its node", p.Name)
			}
		})
	}
}
