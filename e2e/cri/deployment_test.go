package cri

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/e2e/cri/images"
)

// TestDeploymentOfHTTPServers: a Deployment's pods reach Running and Ready
// through an httpGet readiness probe, get IPs from the node's CNI subnet,
// reach each other over HTTP; deleting the Deployment removes every
// container and sandbox and host-local releases every IP.
func TestDeploymentOfHTTPServers(t *testing.T) {
	ns := newNamespace(t)
	ctx := ctxFor(t, 3*time.Minute)
	if _, err := env.Client.AppsV1().Deployments(ns).Create(ctx, httpdDeployment("web", 3), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var pods []v1.Pod
	deadline := time.Now().Add(90 * time.Second)
	for {
		l, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			t.Fatal(err)
		}
		ready := 0
		for i := range l.Items {
			if isRunningReady(&l.Items[i]) {
				ready++
			}
		}
		if len(l.Items) == 3 && ready == 3 {
			pods = l.Items
			break
		}
		if time.Now().After(deadline) {
			for i := range l.Items {
				p := &l.Items[i]
				t.Logf("%s: phase=%s %s %s", p.Name, p.Status.Phase, conditions(p), containerStates(p.Status.ContainerStatuses))
			}
			t.Fatalf("deployment: %d pods, %d Running+Ready after 90s", len(l.Items), ready)
		}
		time.Sleep(250 * time.Millisecond)
	}
	var ips []string
	for _, p := range pods {
		if !inCIDR(p.Status.PodIP, node.PodCIDR) {
			t.Fatalf("pod %s IP %q not in the node's pod CIDR %s", p.Name, p.Status.PodIP, node.PodCIDR)
		}
		if p.Spec.NodeName != node.Name {
			t.Fatalf("pod %s on node %q", p.Name, p.Spec.NodeName)
		}
		ips = append(ips, p.Status.PodIP)
	}
	if distinct := slices.Compact(slices.Sorted(slices.Values(ips))); len(distinct) != len(ips) {
		t.Fatalf("pod IPs not distinct: %v", ips)
	}
	held, err := node.AllocatedIPs()
	if err != nil {
		t.Fatal(err)
	}
	for _, ip := range ips {
		if !slices.Contains(held, ip) {
			t.Fatalf("host-local does not hold pod IP %s (holds %v)", ip, held)
		}
	}

	// Pod to pod: each pod fetches the page of the next one.
	for i, p := range pods {
		target := pods[(i+1)%len(pods)].Status.PodIP
		out := mustKubectl(t, "exec", "-n", ns, p.Name, "--", "timeout", "3", "wget", "-qO-", "http://"+target+"/")
		if out != images.IndexHTML {
			t.Fatalf("pod %s fetching http://%s/: got %q", p.Name, target, out)
		}
	}
	// And the host reaches the pods over the bridge.
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + pods[0].Status.PodIP + "/")
	if err != nil {
		t.Fatalf("host to pod: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != images.IndexHTML {
		t.Fatalf("host to pod: %q", body)
	}

	// Delete: every sandbox and container goes, every IP is released.
	if err := env.Client.AppsV1().Deployments(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitNoPods(t, ns, 60*time.Second)
	ok := waitUntil(60*time.Second, func() bool { return len(sandboxesOf(t, ns)) == 0 && len(containersOf(t, ns)) == 0 })
	if !ok {
		t.Fatalf("after deleting the deployment: %d sandboxes and %d containers left", len(sandboxesOf(t, ns)), len(containersOf(t, ns)))
	}
	held, err = node.AllocatedIPs()
	if err != nil {
		t.Fatal(err)
	}
	for _, ip := range ips {
		if slices.Contains(held, ip) {
			t.Fatalf("host-local still holds %s after the pods were deleted (holds %v)", ip, held)
		}
	}
}

// TestHostPort: a hostPort is reachable on the node through portmap's DNAT.
func TestHostPort(t *testing.T) {
	ns := newNamespace(t)
	p := podSpec("hostport", "exec httpd -f -p 80 -h /www")
	p.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 80, HostPort: 18080}}
	p.Spec.TerminationGracePeriodSeconds = ptr(int64(1))
	createPod(t, ns, p)
	got := waitPod(t, ns, p.Name, 60*time.Second, "Running", isRunning)
	// The bridge's gateway address is one of the node's own addresses.
	gw := strings.TrimSuffix(node.PodCIDR, "0/24") + "1"
	var body string
	ok := waitUntil(20*time.Second, func() bool {
		resp, err := (&http.Client{Timeout: 3 * time.Second}).Get(fmt.Sprintf("http://%s:18080/", gw))
		if err != nil {
			body = err.Error()
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		body = string(b)
		return body == images.IndexHTML
	})
	if !ok {
		t.Fatalf("hostPort 18080 on %s (pod IP %s): %s", gw, got.Status.PodIP, body)
	}
	if err := env.Client.CoreV1().Pods(ns).Delete(context.Background(), p.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitNoPods(t, ns, 60*time.Second)
}

// waitUntil polls cond every 200 ms until it holds or timeout passes.
func waitUntil(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(200 * time.Millisecond)
	}
}
