// Package framework is kubeproof's scheduling framework, shaped like
// kube-scheduler's: plugins are small types with Name() and one method per
// extension point they implement (QueueSort, PreFilter, Filter, PostFilter,
// PreScore, Score with optional NormalizeScore); per-attempt data lives in a
// CycleState that PreFilter fills once per pod; NodeInfo aggregates a node with
// the pods assigned to it; Status carries the outcome with Kubernetes' reason
// strings; Framework runs one profile's plugins with per-plugin weights.
//
// Plugins are pure functions of the pod, the CycleState and the snapshot they
// are handed: they never do I/O. Preemption (PostFilter) returns its victims
// and nominated node as data; the scheduler loop performs the API writes.
//
// Spec properties: a pod is only bound to a node on which every Filter plugin
// succeeds, counting pods assumed but not yet bound — which is how SCHED-2
// (NodeCapacity) and SCHED-3 (BindUntainted) hold.
package framework
