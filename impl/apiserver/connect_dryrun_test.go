package apiserver_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestKubeletConnectDryRunRefused: as kube-apiserver's connect handler,
// nodes/proxy, pods/exec, pods/attach and pods/portforward refuse a request
// naming dryRun (any value, even empty) with 400 "dryRun is not supported"
// before the pod or node is looked up, so nothing reaches the kubelet and
// a missing pod or node is not reported. pods/log is a get upstream, not a
// connect: dryRun does not change its answer (404 for a missing pod).
func TestKubeletConnectDryRunRefused(t *testing.T) {
	e := newEnv(t, nil)
	var hits atomic.Int32
	kubelet := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = w.Write([]byte("ok"))
	}))
	defer kubelet.Close()
	host, portText, err := net.SplitHostPort(kubelet.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(portText)
	c := context.Background()
	node, err := e.cs.CoreV1().Nodes().Create(c, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: host}}
	node.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(port)
	if _, err := e.cs.CoreV1().Nodes().UpdateStatus(c, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p1", Namespace: "default"},
		Spec: corev1.PodSpec{
			NodeName:   "n1",
			Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
		},
	}
	if _, err := e.cs.CoreV1().Pods("default").Create(c, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// Without dryRun, nodes/proxy reaches the kubelet: the refusal below
	// is what keeps it away.
	if r := e.do("GET", "/api/v1/nodes/n1/proxy/healthz", nil); r.code != http.StatusOK {
		t.Fatalf("nodes/proxy without dryRun: %d %s", r.code, r.body)
	}
	before := hits.Load()

	for _, tc := range []struct{ method, path string }{
		{"GET", "/api/v1/nodes/n1/proxy/healthz?dryRun=All"},
		{"POST", "/api/v1/nodes/n1/proxy/x?a=b&dryRun="},
		{"GET", "/api/v1/nodes/missing/proxy?dryRun=All"},
		{"POST", "/api/v1/namespaces/default/pods/p1/exec?command=ls&container=c&stdout=true&dryRun=All"},
		{"GET", "/api/v1/namespaces/default/pods/p1/exec?command=ls&dryRun="},
		{"POST", "/api/v1/namespaces/default/pods/missing/exec?command=ls&dryRun=All"},
		{"POST", "/api/v1/namespaces/default/pods/p1/attach?stdout=true&dryRun=All"},
		{"GET", "/api/v1/namespaces/default/pods/missing/attach?dryRun="},
		{"POST", "/api/v1/namespaces/default/pods/p1/portforward?ports=80&dryRun=All"},
		{"GET", "/api/v1/namespaces/default/pods/missing/portforward?dryRun="},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			expectStatus(t, e.do(tc.method, tc.path, nil), http.StatusBadRequest, metav1.StatusReasonBadRequest, "dryRun is not supported")
		})
	}
	if n := hits.Load() - before; n != 0 {
		t.Errorf("%d dry-run connect requests reached the kubelet", n)
	}

	// pods/log is not a connect subresource: dryRun is not refused.
	expectStatus(t, e.do("GET", "/api/v1/namespaces/default/pods/missing/log?dryRun=All", nil), http.StatusNotFound, metav1.StatusReasonNotFound, `pods "missing" not found`)
}
