package main

import (
	"testing"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
)

func TestHeapFloorBytes(t *testing.T) {
	for _, tc := range []struct {
		perNode string
		nodes   int
		want    uint64
		wantErr bool
	}{
		{"0", 1000, 0, false},
		{"1Mi", 1000, 1000 << 20, false},
		{"1Mi", 0, 0, false},
		{"512Ki", 2, 1 << 20, false},
		{"1M", 1, 1_000_000, false},
		{heapFloorDefault(), 1, sim.HostHeapFloorPerNode, false}, // the default, as it prints
		{"-1Mi", 10, 0, true},
		{"0.5", 10, 0, true},
		{"one", 10, 0, true},
	} {
		got, err := heapFloorBytes(tc.perNode, tc.nodes)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("heapFloorBytes(%q, %d) = %d, %v; want %d (error %v)", tc.perNode, tc.nodes, got, err, tc.want, tc.wantErr)
		}
	}
}
