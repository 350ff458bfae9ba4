// Package queuesort is the PrioritySort plugin: the active queue pops pods
// with higher spec.priority first, and among equal priorities the one that
// arrived first.
package queuesort

import (
	"encoding/json"

	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	fw "github.com/kubeproof/kubeproof/impl/scheduler/framework"
)

// Name is the plugin's name.
const Name = "PrioritySort"

// PrioritySort orders pods by priority, then arrival.
type PrioritySort struct{}

// New is the plugin factory.
func New(_ json.RawMessage, _ fw.Handle) (fw.Plugin, error) { return &PrioritySort{}, nil }

// Name implements fw.Plugin.
func (*PrioritySort) Name() string { return Name }

// Less implements fw.QueueSortPlugin.
func (*PrioritySort) Less(a, b *fw.QueuedPodInfo) bool {
	pa, pb := corev1helpers.PodPriority(a.Pod), corev1helpers.PodPriority(b.Pod)
	return pa > pb || (pa == pb && a.Timestamp.Before(b.Timestamp))
}
