package linearizability

import (
	"net/http"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/kubeproof/kubeproof/impl/cluster/clustertest"
)

// TestNegativeControls breaks one guarantee at a time between the clients
// and a correct API server and requires the checker to notice.
func TestNegativeControls(t *testing.T) {
	c, _ := clustertest.Start(t, clustertest.Options{})
	for _, tc := range []struct {
		fault fault
		// checks that may report it (any one suffices).
		checks []string
	}{
		{staleQuorumGet, []string{"linearizable", "stale-read"}},
		{dropWatchEvent, []string{"reliable", "resumable"}},
		{reorderWatchEvents, []string{"ordered"}},
		{ackUnwrittenCreate, []string{"linearizable", "version", "revision-order", "list-snapshot"}},
	} {
		t.Run(tc.fault.String(), func(t *testing.T) {
			cfg := rest.CopyConfig(c.AdminConfig)
			var ft *faultyTransport
			cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
				ft = newFaultyTransport(tc.fault, rt)
				return ft
			}
			h := record(t, RecordConfig{Scenario: "negative-" + tc.fault.String(), Servers: []*rest.Config{cfg}, Namespace: "lin", Duration: 2 * time.Second})
			if !ft.fired.Load() {
				t.Fatalf("the fault %s was never injected", tc.fault)
			}
			res := checkHistory(t, h)
			if res.OK() {
				t.Fatalf("checker missed %s", tc.fault)
			}
			found := map[string]bool{}
			for _, v := range res.Violations {
				found[v.Check] = true
			}
			for _, want := range tc.checks {
				if found[want] {
					return
				}
			}
			t.Errorf("%s reported as %v, want one of %v", tc.fault, res.Violations, tc.checks)
		})
	}
}
