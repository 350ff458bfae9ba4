package controllermanager_test

import (
	"context"
	"sync"
	"testing"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubeproof/kubeproof/impl/cluster/clustertest"
	"github.com/kubeproof/kubeproof/impl/controllermanager"
)

// TestDisruptionControllerEvents: a budget whose selector matches no pod
// gets upstream's NoPods event through the API server.
func TestDisruptionControllerEvents(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API server")
	}
	c, _ := clustertest.Start(t, clustertest.Options{})
	restCfg := rest.CopyConfig(c.AdminConfig)
	// Standing in for the controller manager's: no warnings logged.
	controllermanager.QuietWarnings(restCfg)
	cs, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	one := intstr.FromInt32(1)
	if _, err := cs.PolicyV1().PodDisruptionBudgets("default").Create(ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "lonely"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "none"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := controllermanager.DefaultConfig()
	cfg.LeaderElect = false
	cfg.Controllers = []string{controllermanager.Disruption}
	var wg sync.WaitGroup
	cmErr := make(chan error, 1)
	wg.Add(1)
	go func() { defer wg.Done(); cmErr <- controllermanager.Run(ctx, cs, restCfg, cfg) }()
	defer func() {
		cancel()
		wg.Wait()
		if err := <-cmErr; err != nil {
			t.Errorf("controller manager: %v", err)
		}
	}()
	eventually(t, "a NoPods event on the budget", func() (bool, error) {
		evs, err := cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.Reason == "NoPods" && e.Type == "Normal" && e.Message == "No matching pods found" &&
				e.InvolvedObject.Kind == "PodDisruptionBudget" && e.InvolvedObject.Name == "lonely" && e.Source.Component == "controllermanager" {
				return true, nil
			}
		}
		return false, nil
	})
}
