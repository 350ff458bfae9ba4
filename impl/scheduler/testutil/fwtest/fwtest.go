// Package fwtest builds frameworks over snapshots for tests and benchmarks.
package fwtest

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/kubeproof/kubeproof/impl/scheduler/cache"
	"github.com/kubeproof/kubeproof/impl/scheduler/config"
	fw "github.com/kubeproof/kubeproof/impl/scheduler/framework"
	"github.com/kubeproof/kubeproof/impl/scheduler/plugins"
)

// NewFramework builds the default-profile framework (optionally with a
// custom profile) over a snapshot of pods and nodes.
func New(pods []*v1.Pod, nodes []*v1.Node, profile *config.KubeSchedulerProfile, opts ...fw.Option) (*fw.Framework, *cache.Snapshot, error) {
	snap := cache.NewSnapshot(pods, nodes)
	if profile == nil {
		profile = &config.KubeSchedulerProfile{SchedulerName: config.DefaultSchedulerName}
	}
	f, err := fw.NewFramework(context.Background(), plugins.NewInTreeRegistry(), profile,
		append([]fw.Option{fw.WithSnapshotSharedLister(snap), fw.WithParallelism(2)}, opts...)...)
	if err != nil {
		return nil, nil, fmt.Errorf("building framework: %w", err)
	}
	return f, snap, nil
}
