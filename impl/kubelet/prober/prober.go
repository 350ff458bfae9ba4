// Package prober runs liveness, readiness and startup probes and lifecycle
// hooks. The probe state machine (when a probe is due, how outcomes turn
// into a result through successThreshold/failureThreshold) is pure; Run and
// RunHook do the I/O through the runtime: exec via ExecSync, httpGet and
// tcpSocket via the runtime's NetworkProber when it has one (the
// simulation), otherwise over the network to the pod IP; grpc
// (grpc.health.v1 Check) likewise through GRPCProber or the network.
package prober

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubeproof/kubeproof/impl/kubelet/podstate"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
)

// State is one probe's state for one container instance.
type State struct {
	Result    podstate.ProbeResult
	Successes int32 // consecutive
	Failures  int32 // consecutive
	LastRun   time.Time
}

// Initial is a probe's state before it first runs: readiness starts as
// failure (not ready), liveness as success, startup as unknown.
func Initial(kind string) State {
	switch kind {
	case runtime.ProbeReadiness:
		return State{Result: podstate.ProbeFailure}
	case runtime.ProbeLiveness:
		return State{Result: podstate.ProbeSuccess}
	}
	return State{Result: podstate.ProbeUnknown}
}

func orDefault(v, d int32) int32 {
	if v <= 0 {
		return d
	}
	return v
}

// Period, Timeout, thresholds with upstream defaults.
func period(p *v1.Probe) time.Duration {
	return time.Duration(orDefault(p.PeriodSeconds, 10)) * time.Second
}

// Timeout is the probe's timeoutSeconds (default 1 s).
func Timeout(p *v1.Probe) time.Duration {
	return time.Duration(orDefault(p.TimeoutSeconds, 1)) * time.Second
}

// Due reports whether the probe should run at now for a container that
// started at startedAt, and otherwise when it is next due.
func Due(p *v1.Probe, st State, startedAt, now time.Time) (bool, time.Time) {
	next := startedAt.Add(time.Duration(p.InitialDelaySeconds) * time.Second)
	if !st.LastRun.IsZero() {
		next = st.LastRun.Add(period(p))
	}
	return !now.Before(next), next
}

// Record folds one outcome into the state.
func Record(p *v1.Probe, st State, success bool, now time.Time) State {
	st.LastRun = now
	if success {
		st.Successes++
		st.Failures = 0
		if st.Successes >= orDefault(p.SuccessThreshold, 1) {
			st.Result = podstate.ProbeSuccess
		}
	} else {
		st.Failures++
		st.Successes = 0
		if st.Failures >= orDefault(p.FailureThreshold, 3) {
			st.Result = podstate.ProbeFailure
		}
	}
	return st
}

// Target is the container a probe or hook runs against.
type Target struct {
	Pod         *v1.Pod
	Container   *v1.Container
	ContainerID string
	PodIP       string
}

// Run executes a probe once and reports success and a message.
func Run(ctx context.Context, rt runtime.Runtime, kind string, p *v1.Probe, t Target) (bool, string) {
	if o, ok := rt.(runtime.ProbeOverrider); ok {
		if success, ok := o.ProbeOverride(t.ContainerID, kind); ok {
			if success {
				return true, ""
			}
			return false, fmt.Sprintf("%s probe failed (simulated)", kind)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, Timeout(p))
	defer cancel()
	var err error
	if p.GRPC != nil {
		err = runGRPC(ctx, rt, p.GRPC, Timeout(p), t)
	} else {
		err = runHandler(ctx, rt, p.Exec, p.HTTPGet, p.TCPSocket, Timeout(p), t)
	}
	if err != nil {
		return false, err.Error()
	}
	return true, ""
}

func runHandler(ctx context.Context, rt runtime.Runtime, exec *v1.ExecAction, hg *v1.HTTPGetAction, tcp *v1.TCPSocketAction, timeout time.Duration, t Target) error {
	switch {
	case exec != nil:
		stdout, stderr, code, err := rt.ExecSync(ctx, t.ContainerID, exec.Command, timeout)
		if err != nil {
			return fmt.Errorf("exec %v: %w", exec.Command, err)
		}
		if code != 0 {
			return fmt.Errorf("command %v exited with %d: %s%s", exec.Command, code, stdout, stderr)
		}
		return nil
	case hg != nil:
		port, err := resolvePort(hg.Port, t.Container)
		if err != nil {
			return err
		}
		var code int
		if np, ok := rt.(runtime.NetworkProber); ok && hg.Host == "" {
			code, err = np.ProbeHTTP(ctx, t.ContainerID, port, hg.Path)
		} else {
			code, err = httpGet(ctx, hg, port, t.PodIP)
		}
		if err != nil {
			return fmt.Errorf("HTTP probe failed: %w", err)
		}
		if code < 200 || code >= 400 {
			return fmt.Errorf("HTTP probe failed with statuscode: %d", code)
		}
		return nil
	case tcp != nil:
		port, err := resolvePort(tcp.Port, t.Container)
		if err != nil {
			return err
		}
		if np, ok := rt.(runtime.NetworkProber); ok && tcp.Host == "" {
			return np.ProbeTCP(ctx, t.ContainerID, port)
		}
		host := tcp.Host
		if host == "" {
			host = t.PodIP
		}
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			return err
		}
		return conn.Close()
	}
	return fmt.Errorf("handler has no action")
}

// httpGet sends an httpGet probe's request (upstream's, with the "probe"
// user agent) with probeClient and returns the answer's status code.
func httpGet(ctx context.Context, hg *v1.HTTPGetAction, port int, podIP string) (int, error) {
	req, err := newHTTPGetRequest(ctx, hg, port, podIP, "probe")
	if err != nil {
		return 0, err
	}
	resp, err := probeClient.Do(req)
	if err != nil {
		return 0, err
	}
	discardBody(resp)
	return resp.StatusCode, nil
}

// probeClient sends httpGet probes as upstream's prober's transport:
// HTTPS without verifying the container's certificate, no proxy, no
// kept-alive connections, no compression, redirects followed on the same
// host only (at most 10; one to another host is the answer).
var probeClient = &http.Client{
	Transport: &http.Transport{
		TLSClientConfig:    &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // as upstream's prober
		DisableKeepAlives:  true,
		DisableCompression: true,
	},
	CheckRedirect: sameHostRedirects,
}

// resolvePort turns a probe's or hook's port into a number as upstream's
// ResolveContainerPort: a name is looked up in the container's ports,
// then, not found, read as a number (whose parse error is the answer);
// the number must be within 1-65535 ("invalid port number: N").
func resolvePort(p intstr.IntOrString, c *v1.Container) (int, error) {
	port := p.IntValue()
	if p.Type == intstr.String {
		named := slices.IndexFunc(c.Ports, func(cp v1.ContainerPort) bool { return cp.Name == p.StrVal })
		if named >= 0 {
			port = int(c.Ports[named].ContainerPort)
		} else {
			n, err := strconv.Atoi(p.StrVal)
			if err != nil {
				return n, err
			}
			port = n
		}
	}
	if port <= 0 || port >= 65536 {
		return port, fmt.Errorf("invalid port number: %v", port)
	}
	return port, nil
}
