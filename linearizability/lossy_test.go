package linearizability

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/kubeproof/kubeproof/impl/cluster/clustertest"
)

// lossyTransport is a network that loses writes' requests and responses:
// of every four ConfigMap writes, one fails before it is sent and one is
// sent and its response lost. The client sees the same error either way,
// so both are ambiguous; the server is correct.
type lossyTransport struct {
	next   http.RoundTripper
	writes atomic.Int64
	// lostRequests and lostResponses count what the transport did.
	lostRequests, lostResponses atomic.Int64
}

var errLost = errors.New("connection reset by lossy test network")

func isConfigMapWrite(req *http.Request) bool {
	return req.Method != http.MethodGet && strings.Contains(req.URL.Path, "/configmaps")
}

func (t *lossyTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !isConfigMapWrite(req) {
		return t.next.RoundTrip(req)
	}
	switch t.writes.Add(1) % 4 {
	case 1:
		if req.Body != nil {
			req.Body.Close()
		}
		t.lostRequests.Add(1)
		return nil, errLost
	case 3:
		resp, err := t.next.RoundTrip(req)
		if err != nil {
			return nil, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		t.lostResponses.Add(1)
		return nil, errLost
	}
	return t.next.RoundTrip(req)
}

// TestLossyNetwork records a history in which half the writes are
// ambiguous — the worst shape for the per-key search, each unresolved
// ambiguous write doubling what it explores — and requires a verdict
// well within the scenarios' budget, and that verdict to be PASS: the
// writes whose response was lost are observed, those never sent are shown
// not to have happened by the watches.
func TestLossyNetwork(t *testing.T) {
	c, _ := clustertest.Start(t, clustertest.Options{})
	cfg := rest.CopyConfig(c.AdminConfig)
	lossy := &lossyTransport{}
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		lossy.next = rt
		return lossy
	}
	rec, err := NewRecorder(RecordConfig{Scenario: "lossy-network", Servers: []*rest.Config{cfg}, Namespace: "lin", Duration: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	h, err := rec.Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	res := Check(h, CheckOptions{PorcupineTimeout: time.Minute})
	t.Log(Summary(h, res))
	t.Logf("requests lost %d, responses lost %d", lossy.lostRequests.Load(), lossy.lostResponses.Load())
	ambiguous := 0
	for _, o := range h.Ops {
		if o.Outcome == Ambiguous && o.isWrite() {
			ambiguous++
		}
	}
	if ambiguous < 20 {
		t.Fatalf("only %d ambiguous writes recorded; the scenario does not exercise them", ambiguous)
	}
	if !res.OK() {
		for i, v := range res.Violations {
			if i == 20 {
				break
			}
			t.Error(v)
		}
		t.Fatalf("history of %d operations (%d ambiguous writes) rejected: porcupine %s", len(h.Ops), ambiguous, res.Linearizable)
	}
}
