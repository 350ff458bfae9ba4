package kubelet

import (
	"context"
	"fmt"
	"io"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/podstate"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
	"github.com/kubeproof/kubeproof/impl/kubelet/server"
)

// This file is what the kubelet API (impl/kubelet/server) needs from a
// kubelet beyond ContainerLogs: pod lookup by name, the state of a
// container for `logs --follow`, exec, and a running-pods count for
// /metrics.

// GetPodByName returns the pod namespace/name as this kubelet last saw it
// from its pod source. The pod is shared: callers must not modify it. A
// pod still being terminated here after it left the API is not returned.
func (k *Kubelet) GetPodByName(namespace, name string) (*v1.Pod, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, r := range k.pods {
		if p := r.pod; p != nil && p.Namespace == namespace && p.Name == name {
			return p, true
		}
	}
	return nil, false
}

// RunningPods counts the pods whose sandbox this kubelet has admitted and
// not yet finished (upstream's kubelet_running_pods counts pods with a
// running sandbox; this is the kubelet's own view of the same set).
func (k *Kubelet) RunningPods() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	n := 0
	for _, r := range k.pods {
		if r.admitted && !r.rejected && r.pod != nil {
			n++
		}
	}
	return n
}

// LifecycleHTTPFallbacks counts the HTTPS lifecycle hooks (postStart,
// preStop) this kubelet sent again over HTTP, after an HTTP answer, and
// that succeeded so (upstream's kubelet_lifecycle_handler_http_fallbacks_total).
func (k *Kubelet) LifecycleHTTPFallbacks() uint64 { return k.httpFallbacks.Load() }

// SetCertificateManagers names the managers of this kubelet's client
// certificate (--rotate-certificates) and serving certificate
// (--rotate-server-certificates), nil when off, for the kubelet API's
// /metrics (CertificateMetrics).
func (k *Kubelet) SetCertificateManagers(client, serving *CertificateManager) {
	k.certs.Store(&[2]*CertificateManager{client, serving})
}

// CertificateMetrics is server.CertificateReporter: upstream's
// certificate manager metrics of the managers SetCertificateManagers
// named.
func (k *Kubelet) CertificateMetrics() server.CertificateMetrics {
	var cm server.CertificateMetrics
	if c := k.certs.Load(); c != nil {
		if c[0] != nil {
			s := c[0].Metrics()
			cm.Client = &s
		}
		if c[1] != nil {
			s := c[1].Metrics()
			cm.Server = &s
		}
	}
	return cm
}

// ContainerRunning reports whether the latest instance of the pod's
// container (an app container, or else an init container of that name)
// is running; `logs --follow` ends when it is not.
func (k *Kubelet) ContainerRunning(ctx context.Context, namespace, name, container string) bool {
	c, err := k.latestContainer(ctx, namespace, name, container)
	return err == nil && c.State == podstate.ContainerRunning
}

// ExecInContainer runs cmd in the pod's running container through the
// runtime's ExecSync and returns its output and exit code. timeout 0
// means no timeout.
func (k *Kubelet) ExecInContainer(ctx context.Context, namespace, name, container string, cmd []string, timeout time.Duration) (stdout, stderr []byte, exitCode int32, err error) {
	c, err := k.latestContainer(ctx, namespace, name, container)
	if err != nil {
		return nil, nil, 0, err
	}
	if c.State != podstate.ContainerRunning {
		return nil, nil, 0, fmt.Errorf("container %s is not running (state %s)", container, c.State)
	}
	return k.rt.ExecSync(ctx, c.ID, cmd, timeout)
}

// latestContainer finds the latest runtime instance of a named container.
func (k *Kubelet) latestContainer(ctx context.Context, namespace, name, container string) (*podstate.Container, error) {
	pod, ok := k.GetPodByName(namespace, name)
	if !ok {
		return nil, fmt.Errorf("pod %q not found on node %s", namespace+"/"+name, k.cfg.NodeName)
	}
	init := containerSpec(pod, container, false) == nil
	if init && containerSpec(pod, container, true) == nil {
		return nil, fmt.Errorf("container %s is not valid for pod %s", container, name)
	}
	rs, err := k.podRuntimeState(ctx, pod.UID)
	if err != nil {
		return nil, err
	}
	c := rs.Latest(container, init)
	if c == nil {
		return nil, fmt.Errorf("container %q in pod %q is waiting to start: ContainerCreating", container, name)
	}
	return c, nil
}

// PortForward connects stream to port in the pod's network namespace
// through the runtime (runtime.PortForwarder), until either side closes.
func (k *Kubelet) PortForward(ctx context.Context, namespace, name string, port int32, stream io.ReadWriteCloser) error {
	pod, ok := k.GetPodByName(namespace, name)
	if !ok {
		stream.Close()
		return fmt.Errorf("pod %q not found on node %s", namespace+"/"+name, k.cfg.NodeName)
	}
	pf, ok := k.rt.(runtime.PortForwarder)
	if !ok {
		stream.Close()
		return fmt.Errorf("the %s runtime does not support port forwarding", k.rt.Type())
	}
	rs, err := k.podRuntimeState(ctx, pod.UID)
	if err != nil {
		stream.Close()
		return err
	}
	sb := rs.LatestSandbox()
	if sb == nil || !sb.Ready {
		stream.Close()
		return fmt.Errorf("pod %s has no ready sandbox", name)
	}
	return pf.PortForward(ctx, sb.ID, port, stream)
}
