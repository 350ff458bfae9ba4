package apiserver_test

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver"
	"github.com/kubeproof/kubeproof/impl/apiserver/admission"
)

// TestPriorityAndFairness: with API Priority and Fairness (the default) a
// user's requests are held to their level's seats (here global-default's
// 2 of the server's 16, with what it can borrow); one more waits in its queue and,
// past the wait limit, gets 429 TooManyRequests with Retry-After. Every
// answer names its FlowSchema and priority level; the administrator
// (exempt) and health probes still go through; the flow control metrics
// are served; the held requests finish once let go.
func TestPriorityAndFairness(t *testing.T) {
	g := &gate{entered: make(chan struct{}, 32), release: make(chan struct{})}
	reg := prometheus.NewRegistry()
	e := newEnv(t, func(c *apiserver.Config) {
		// 16 seats: global-default's nominal share is 2. (With fewer, the
		// first borrowing adjustment may leave it, idle and lending, at a
		// current limit of 0, which starts nothing from its queues until
		// its demand shows, as kube-apiserver's.)
		c.MaxMutatingRequestsInFlight = 8
		c.MaxRequestsInFlight = 8
		// The wait limit is a quarter of it: 2 s; the held requests
		// outlive the rejected one's wait by 6 s.
		c.RequestTimeout = 8 * time.Second
		c.AdmissionMutators = []admission.Mutator{g}
		c.Metrics = reg
	})
	create := func(i int) response {
		return e.do("POST", "/api/v1/namespaces/default/configmaps", []byte(fmt.Sprintf(`{"metadata":{"name":"cm-%d"}}`, i)), "Impersonate-User", "bob")
	}
	// global-default starts at its nominal 2 seats, but a configuration
	// reload re-divides the seats by the demand so far, as kube-apiserver's
	// (the FlowSchemas' status writes just after start are reloads), so
	// during the burst it may get up to its upper limit, 2 + 16.
	responses := make(chan response, 32)
	held := 0
	var rejected response
	for i := 0; rejected.code == 0; i++ {
		if i == 20 {
			t.Fatal("20 requests of one user all got a seat: more than global-default's upper limit of 18")
		}
		go func() { responses <- create(i) }()
		select {
		case <-g.entered:
			held++
		case rejected = <-responses:
		}
	}
	if held == 0 {
		t.Fatal("no request got a seat")
	}
	expectStatus(t, rejected, http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests, "Too many requests, please try again later.")
	if ra, err := strconv.Atoi(rejected.header.Get("Retry-After")); err != nil || ra < 1 {
		t.Errorf("Retry-After %q", rejected.header.Get("Retry-After"))
	}
	// The UIDs are the stored objects'.
	uid := func(kind, name string) string {
		t.Helper()
		var m metav1.Object
		var err error
		if kind == "flowschemas" {
			m, err = e.cs.FlowcontrolV1().FlowSchemas().Get(ctx(t), name, metav1.GetOptions{})
		} else {
			m, err = e.cs.FlowcontrolV1().PriorityLevelConfigurations().Get(ctx(t), name, metav1.GetOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
		return string(m.GetUID())
	}
	if got, want := rejected.header.Get("X-Kubernetes-PF-FlowSchema-UID"), uid("flowschemas", "global-default"); got != want {
		t.Errorf("flow schema UID %q, want global-default's %q", got, want)
	}
	if got, want := rejected.header.Get("X-Kubernetes-PF-PriorityLevel-UID"), uid("prioritylevelconfigurations", "global-default"); got != want {
		t.Errorf("priority level UID %q, want global-default's %q", got, want)
	}

	// The administrator is exempt, and so are probes.
	r := e.do("GET", "/api/v1/namespaces/default/configmaps", nil)
	if r.code != http.StatusOK {
		t.Fatalf("admin while bob's level is full: %d %s", r.code, r.body)
	}
	if got, want := r.header.Get("X-Kubernetes-PF-PriorityLevel-UID"), uid("prioritylevelconfigurations", "exempt"); got != want {
		t.Errorf("admin's priority level UID %q, want exempt's %q", got, want)
	}
	if r := e.doWith(e.anon, "GET", "/readyz", nil); r.code != http.StatusOK {
		t.Fatalf("readyz while full: %d %s", r.code, r.body)
	}

	metrics := string(e.do("GET", "/metrics", nil).body)
	for _, want := range []string{
		`apiserver_flowcontrol_rejected_requests_total{flow_schema="global-default",priority_level="global-default",reason="time-out"} 1`,
		fmt.Sprintf(`apiserver_flowcontrol_current_executing_requests{flow_schema="global-default",priority_level="global-default"} %d`, held),
		`apiserver_flowcontrol_nominal_limit_seats{priority_level="global-default"} 2`,
		`apiserver_flowcontrol_dispatched_requests_total{flow_schema="exempt",priority_level="exempt"}`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	close(g.release)
	for range held {
		if r := <-responses; r.code != http.StatusCreated {
			t.Errorf("held create: %d %s", r.code, r.body)
		}
	}
}

// TestPriorityAndFairnessOff: --enable-priority-and-fairness=false keeps
// the legacy limits: no flow control headers.
func TestPriorityAndFairnessOff(t *testing.T) {
	e := newEnv(t, func(c *apiserver.Config) { c.DisablePriorityAndFairness = true })
	r := e.do("GET", "/api/v1/namespaces/default/configmaps", nil)
	if r.code != http.StatusOK || r.header.Get("X-Kubernetes-PF-FlowSchema-UID") != "" {
		t.Fatalf("flow control off: %d, flow schema header %q", r.code, r.header.Get("X-Kubernetes-PF-FlowSchema-UID"))
	}
}
