package prober

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
)

// RunHook executes a postStart or preStop handler, as upstream's handler
// runner: exec, httpGet or sleep. On failure it returns the error and the
// message upstream's runner builds around it, which a failed postStart
// hook's waiting message shows:
//
//	Exec lifecycle hook ([argv]) for Container "c" in Pod "name_ns(uid)" failed - error: E, message: "stdout+stderr"
//	HTTP lifecycle hook (path) for Container "c" in Pod "name_ns(uid)" failed - error: E
//	Sleep lifecycle hook (seconds) for Container "c" in Pod "name_ns(uid)" failed - error: container terminated before sleep hook finished
//	Cannot run handler: invalid handler: ...
//
// An exec hook fails when the command cannot run or exits non-zero (the
// error as upstream's CRI client words it); an httpGet hook only when the
// request fails: any response is success, whatever its code; a sleep
// hook when ctx is done before its time is up (sleep reports whether it
// slept it all). An httpGet hook's request is upstream's (user agent
// "kube-lifecycle/<version>", hookClient); an HTTPS one answered in plain
// HTTP is retried over HTTP, and httpFallback, when not nil, is told
// the host:port when that succeeds. An httpGet
// without a host goes to t.PodIP, the IP the runtime reports for the
// pod's newest sandbox while it is ready (upstream reads it from the
// runtime's pod status, not from the API's: a host-network pod's sandbox
// on containerd has none); with none the hook fails ("failed to find
// networking container"), except on a runtime that answers HTTP itself
// (NetworkProber, the simulation). A tcpSocket handler is in the API for
// compatibility only and fails as any other handler upstream does not
// run ("invalid handler: ...").
func RunHook(ctx context.Context, rt runtime.Runtime, h *v1.LifecycleHandler, t Target, sleep func(context.Context, time.Duration) bool, httpFallback func(host string)) (string, error) {
	switch {
	case h == nil:
		return "", nil
	case h.Exec != nil:
		output, err := execHook(ctx, rt, h.Exec.Command, t.ContainerID)
		if err != nil {
			return fmt.Sprintf("Exec lifecycle hook (%v) for Container %q in Pod %q failed - error: %v, message: %q",
				h.Exec.Command, containerName(t), podDesc(t.Pod), err, output), err
		}
		return "", nil
	case h.HTTPGet != nil:
		if err := httpHook(ctx, rt, h.HTTPGet, t, httpFallback); err != nil {
			return fmt.Sprintf("HTTP lifecycle hook (%s) for Container %q in Pod %q failed - error: %v",
				h.HTTPGet.Path, containerName(t), podDesc(t.Pod), err), err
		}
		return "", nil
	case h.Sleep != nil:
		if !sleep(ctx, time.Duration(h.Sleep.Seconds)*time.Second) {
			err := errors.New("container terminated before sleep hook finished")
			return fmt.Sprintf("Sleep lifecycle hook (%d) for Container %q in Pod %q failed - error: %v",
				h.Sleep.Seconds, containerName(t), podDesc(t.Pod), err), err
		}
		return "", nil
	}
	err := fmt.Errorf("invalid handler: %v", h)
	return fmt.Sprintf("Cannot run handler: %v", err), err
}

// execHook runs an exec hook's command without a timeout, as upstream's
// runner does, and returns its stdout followed by its stderr.
func execHook(ctx context.Context, rt runtime.Runtime, cmd []string, id string) (string, error) {
	stdout, stderr, code, err := rt.ExecSync(ctx, id, cmd, 0)
	output := string(stdout) + string(stderr)
	if err != nil {
		return output, err
	}
	if code != 0 {
		return output, fmt.Errorf("command '%s' exited with %d: %s", strings.Join(cmd, " "), code, stderr)
	}
	return output, nil
}

// httpHook sends an httpGet hook's request (sendHook) or, without a host
// on a runtime that answers HTTP itself, asks the runtime; only a
// request that fails fails the hook.
func httpHook(ctx context.Context, rt runtime.Runtime, hg *v1.HTTPGetAction, t Target, fellBack func(host string)) error {
	np, simulated := rt.(runtime.NetworkProber)
	if !simulated && hg.Host == "" && t.PodIP == "" {
		return noPodIP(t.Pod)
	}
	port, err := resolvePort(hg.Port, t.Container)
	if err != nil {
		return err
	}
	if simulated && hg.Host == "" {
		_, err = np.ProbeHTTP(ctx, t.ContainerID, port, hg.Path)
		return err
	}
	req, err := newHTTPGetRequest(ctx, hg, port, t.PodIP, "lifecycle")
	if err != nil {
		return err
	}
	return sendHook(ctx, req, fellBack)
}

// noPodIP is a hook's failure when it names no host and the runtime
// reports no IP for the pod: upstream's message, which goes on with the
// runtime's pod status, here the pod it names.
func noPodIP(pod *v1.Pod) error {
	if pod == nil {
		return fmt.Errorf("failed to find networking container: no pod")
	}
	return fmt.Errorf("failed to find networking container: pod %s/%s (%s) has no IP from a ready sandbox", pod.Namespace, pod.Name, pod.UID)
}

// podDesc names a pod as upstream's kubelet does in its messages:
// name_namespace(uid).
func podDesc(pod *v1.Pod) string {
	if pod == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}

func containerName(t Target) string {
	if t.Container == nil {
		return ""
	}
	return t.Container.Name
}
