// Package registry holds the per-kind behaviour of every resource the API
// server serves: defaulting (as upstream's SetDefaults_* functions for the v1
// types), validation with field paths, what a client may set on create and
// update, status subresources, the /scale view, the grace period of pod
// deletions, selectable fields and server-side tables for kubectl get.
//
// Everything here is a pure function of the objects it is given (plus the
// clock for table ages); the API server in package apiserver does the I/O.
// What a Service's IP fields mean on a single- or dual-stack cluster
// (service_ipfamilies.go) takes the cluster's IP families as an argument:
// the allocating storage in package ipallocator, which knows the
// --service-cluster-ip-range, calls it before it allocates.
// All lists every served resource in one place.
//
// Spec properties enforced here: SCHED-1 (a pod's spec.nodeName cannot be
// written by an update; binding is the only way, see pod_update.go) and the
// generation half of DEP-1 (metadata.generation changes exactly when a
// Deployment's spec does, so observedGeneration means what it says).
package registry
