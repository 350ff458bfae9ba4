package kubelet

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

// BenchmarkResyncRunningPod is the periodic resync of a Running pod whose
// status has not changed (30,000 of them every 20 s at 1,000 nodes): its
// cost, and its allocations, are what a kubelet spends per pod when
// nothing happens.
func BenchmarkResyncRunningPod(b *testing.B) {
	h := newHarness(b, nil)
	var uids []types.UID
	for i := 0; i < 30; i++ {
		p := h.create(h.pod(fmt.Sprintf("p%d", i), nil))
		h.sync(p)
		h.sync(p) // the source catches up with the written status
		uids = append(uids, p.UID)
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
