package kubelet

import v1 "k8s.io/api/core/v1"

// Stages of a pod's start on its kubelet that Config.PodTrace is told of,
// in the order a new pod passes them (the same hooks upstream's kubelet
// has as tracing spans and the pod worker's latency metrics).
const (
	// TraceHandedOver: the pod source handed the pod over (HandlePod), on
	// every version the source delivers.
	TraceHandedOver = "kubelet/handed-over"
	// TraceSyncStart: a pod worker starts syncing the pod, on every sync.
	TraceSyncStart = "kubelet/sync-start"
	// TraceVolumesReady: a sync that creates the sandbox or starts
	// containers has set up the pod's volumes (service account tokens
	// requested, ConfigMaps and Secrets read, files written).
	TraceVolumesReady = "kubelet/volumes-ready"
	// TraceStatusWriteStart: a sync found the pod's status changed and
	// starts writing it (the pod is the one the sync read).
	TraceStatusWriteStart = "kubelet/status-write-start"
	// TraceStatusWritten: a pods/status write succeeded; the pod is the
	// one the API server returned.
	TraceStatusWritten = "kubelet/status-written"
)

// PodTraceFunc is told when a pod reaches a stage (Trace* constants). It
// is called synchronously on the kubelet's own goroutines, so it must be
// cheap and must not modify the pod, which is shared and read-only.
type PodTraceFunc func(stage string, pod *v1.Pod)

func (k *Kubelet) trace(stage string, pod *v1.Pod) {
	if k.cfg.PodTrace != nil {
		k.cfg.PodTrace(stage, pod)
	}
}
