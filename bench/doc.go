// Package bench measures kubeproof: API and etcd write throughput, scheduling
// throughput and pod startup latency. Every measurement is a plain function
// of a target (an in-process control plane or any API server reached through
// a kubeconfig), so the same workload runs against kubeproof and against a
// real kube-apiserver for a side-by-side number. Results record the machine
// they ran on.
package bench
