package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeproof/kubeproof/impl/kubelet"
)

// TestUpResolvConf: `kubeproof up --resolv-conf` is each simulated node's
// --resolv-conf, with `kubeproof kubelet`'s default (upstream's
// /etc/resolv.conf): a node checks the file once at start and records
// upstream's CheckLimitsForResolvConf warning on its Node when the file
// is over the resolver's limits, as `kubeproof kubelet --runtime sim`
// does; "" is none, nothing checked: the node's pods run and no warning
// precedes their events (the kubelet checks before it syncs any pod, and
// its events are written in order). Before, up had no --resolv-conf and
// its nodes checked no file.
func TestUpResolvConf(t *testing.T) {
	up, _, err := newRootCommand().Find([]string{"up"})
	if err != nil {
		t.Fatal(err)
	}
	f := up.Flags().Lookup("resolv-conf")
	if f == nil {
		t.Fatal("kubeproof up has no --resolv-conf")
	}
	if f.DefValue != kubelet.DefaultResolverConfig {
		t.Errorf("up --resolv-conf default %q, want kubelet's %q", f.DefValue, kubelet.DefaultResolverConfig)
	}
	if testing.Short() {
		t.Skip("runs kubeproof up")
	}
	tooMany := filepath.Join(t.TempDir(), "resolv.conf")
	domains := make([]string, 33)
	for i := range domains {
		domains[i] = "d" + string(rune('a'+i%26)) + ".example"
	}
	if err := os.WriteFile(tooMany, []byte("nameserver 10.0.0.10\nsearch "+strings.Join(domains, " ")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	nodeWarnings := func(cs kubernetes.Interface) []string {
		evs, err := cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=Node,reason=CheckLimitsForResolvConf"})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range evs.Items {
			got = append(got, e.InvolvedObject.Name+": "+e.Message)
		}
		return got
	}

	cs := runUp(t, ctx, "--nodes", "1", "--no-scheduler", "--no-controller-manager", "--resolv-conf", tooMany)
	want := "node-1: Resolv.conf file '" + tooMany + "' contains search line consisting of more than 32 domains!"
	waitFor(t, time.Minute, "the node's CheckLimitsForResolvConf warning", func() bool {
		got := nodeWarnings(cs)
		return len(got) == 1 && got[0] == want
	})

	cs = runUp(t, ctx, "--nodes", "1", "--no-scheduler", "--no-controller-manager", "--resolv-conf", "")
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: v1.PodSpec{
		NodeName: "node-1", Containers: []v1.Container{{Name: "app", Image: "registry.example.com/app:1.0"}}}}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "the pod's Started event", func() bool {
		evs, err := cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=web,reason=Started"})
		return err == nil && len(evs.Items) > 0
	})
	if got := nodeWarnings(cs); len(got) != 0 {
		t.Errorf("up --resolv-conf \"\": node warnings %q, want none", got)
	}
}
