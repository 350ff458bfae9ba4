package kubelet

import (
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"

	v1 "k8s.io/api/core/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"
)

// BenchmarkResyncRunningPod is the periodic resync of a Running pod whose
// status has not changed (30,000 of them every 20 s at 1,000 nodes): its
// cost, and its allocations, are what a kubelet spends per pod when
// nothing happens.
func BenchmarkResyncRunningPod(b *testing.B) {
	h := newHarness(b, nil)
	// The fake API stores no resourceVersions; a real one does, and the
	// kubelet's pod view relies on them (shareLastStatus).
	var rv atomic.Int64
	h.client.PrependReactor("*", "pods", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
		if u, ok := a.(k8stesting.UpdateAction); ok {
			if p, ok := u.GetObject().(*v1.Pod); ok {
				p.ResourceVersion = strconv.FormatInt(rv.Add(1), 10)
			}
		}
		if c, ok := a.(k8stesting.CreateAction); ok {
			if p, ok := c.GetObject().(*v1.Pod); ok {
				p.ResourceVersion = strconv.FormatInt(rv.Add(1), 10)
			}
		}
		return false, nil, nil
	})
	var uids []types.UID
	for i := 0; i < 30; i++ {
		p := h.create(h.pod(fmt.Sprintf("p%d", i), nil))
		h.sync(p)
		h.sync(p) // the source catches up with the written status
		uids = append(uids, p.UID)
	}
	for _, uid := range uids {
		if rec := h.k.pods[uid]; rec.lastStatus != &rec.pod.Status {
			b.Fatalf("pod %s: the kubelet's last status is not the source's", uid)
		}
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := h.k.syncPod(h.ctx, uids[i%len(uids)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkRelistUnchanged is one relist of a node whose 30 pods' containers
// have not changed (every kubelet, every second).
func BenchmarkRelistUnchanged(b *testing.B) {
	h := newHarness(b, nil)
	for i := 0; i < 30; i++ {
		p := h.create(h.pod(fmt.Sprintf("p%d", i), nil))
		h.sync(p)
	}
	h.k.relist(h.ctx)
	b.ReportAllocs()
	for b.Loop() {
		h.k.relist(h.ctx)
	}
}
