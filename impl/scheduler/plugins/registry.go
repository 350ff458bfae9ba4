// Package plugins is the one place kubeproof's scheduler plugins are
// registered: NewInTreeRegistry maps every plugin name a
// KubeSchedulerConfiguration may use to its factory.
package plugins

import (
	fw "github.com/kubeproof/kubeproof/impl/scheduler/framework"
	"github.com/kubeproof/kubeproof/impl/scheduler/plugins/defaultpreemption"
	"github.com/kubeproof/kubeproof/impl/scheduler/plugins/imagelocality"
	"github.com/kubeproof/kubeproof/impl/scheduler/plugins/interpodaffinity"
	"github.com/kubeproof/kubeproof/impl/scheduler/plugins/nodeaffinity"
	"github.com/kubeproof/kubeproof/impl/scheduler/plugins/nodename"
	"github.com/kubeproof/kubeproof/impl/scheduler/plugins/nodeports"
	"github.com/kubeproof/kubeproof/impl/scheduler/plugins/noderesources"
	"github.com/kubeproof/kubeproof/impl/scheduler/plugins/nodeunschedulable"
	"github.com/kubeproof/kubeproof/impl/scheduler/plugins/podtopologyspread"
	"github.com/kubeproof/kubeproof/impl/scheduler/plugins/queuesort"
	"github.com/kubeproof/kubeproof/impl/scheduler/plugins/tainttoleration"
	"github.com/kubeproof/kubeproof/impl/scheduler/plugins/volumerestrictions"
)

// NewInTreeRegistry returns every plugin kubeproof ships.
func NewInTreeRegistry() fw.Registry {
	return fw.Registry{
		queuesort.Name:                       queuesort.New,
		nodeunschedulable.Name:               nodeunschedulable.New,
		nodename.Name:                        nodename.New,
		tainttoleration.Name:                 tainttoleration.New,
		nodeaffinity.Name:                    nodeaffinity.New,
		nodeports.Name:                       nodeports.New,
		noderesources.FitName:                noderesources.NewFit,
		noderesources.BalancedAllocationName: noderesources.NewBalancedAllocation,
		interpodaffinity.Name:                interpodaffinity.New,
		podtopologyspread.Name:               podtopologyspread.New,
		defaultpreemption.Name:               defaultpreemption.New,
		volumerestrictions.Name:              volumerestrictions.New,
		imagelocality.Name:                   imagelocality.New,
	}
}
