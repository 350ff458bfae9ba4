package sim

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Annotations read from the pod (through the sandbox config) that inject
// faults into a pod's simulated containers. Every key may be suffixed with
// ".<container name>" to apply to one container only; the suffixed key wins
// over the plain one.
const (
	// AnnotationExitCode: the container's process exits with this code
	// (after AnnotationExitAfter, default immediately once started).
	AnnotationExitCode = "sim.kubeproof.io/exit-code"
	// AnnotationExitAfter: a Go duration; the process exits this long after
	// it started, with AnnotationExitCode (default 0).
	AnnotationExitAfter = "sim.kubeproof.io/exit-after"
	// AnnotationCrashAfter: like AnnotationExitAfter, but the exit code
	// defaults to 1.
	AnnotationCrashAfter = "sim.kubeproof.io/crash-after"
	// AnnotationStartFailure: StartContainer fails with this message; the
	// container is left Exited with code 128 and reason StartError, as
	// containerd does.
	AnnotationStartFailure = "sim.kubeproof.io/start-failure"
	// AnnotationSlowStop: a Go duration the process ignores SIGTERM for;
	// StopContainer then takes min(slow-stop, timeout) and the container
	// exits 137 if the timeout ran out first.
	AnnotationSlowStop = "sim.kubeproof.io/slow-stop"
	// AnnotationStopFailure: stopping the running container fails with
	// this cause (default "simulated stop failure") and it keeps running,
	// as containerd's StopContainer when signalling the task fails
	// ("failed to stop container <id>: <cause>", gRPC Unknown); stopping
	// its sandbox fails too, as containerd's StopPodSandbox killing it
	// ("failed to stop container <id>: failed to kill container <id>:
	// <cause>"). The kubelet's FailedKillPod path.
	AnnotationStopFailure = "sim.kubeproof.io/stop-failure"
	// AnnotationLiveness, AnnotationReadiness, AnnotationStartup override
	// the outcome of every probe of that kind: "pass", "fail", or
	// "fail-after=<duration>" (passes until the container has run that
	// long, then fails).
	AnnotationLiveness  = "sim.kubeproof.io/liveness"
	AnnotationReadiness = "sim.kubeproof.io/readiness"
	AnnotationStartup   = "sim.kubeproof.io/startup"
	// AnnotationLogs: the container's output, lines separated by "\n".
	// Default: one line saying the container started.
	AnnotationLogs = "sim.kubeproof.io/logs"
	// AnnotationFiles: comma-separated paths that exist in the container's
	// simulated filesystem at start (for `cat` exec probes).
	AnnotationFiles = "sim.kubeproof.io/files"
	// AnnotationHTTPStatus: the status code the container answers HTTP
	// with (default 200): httpGet probes, port-forwarded requests and
	// httpGet lifecycle hooks get it; a probe fails on one outside
	// 200-399, a hook, as upstream's, whatever the code never does (only
	// a container not running fails it).
	AnnotationHTTPStatus = "sim.kubeproof.io/http-status"
	// AnnotationGRPCStatus: the grpc.health.v1 serving status simulated
	// grpc probes receive: SERVING (default), NOT_SERVING,
	// SERVICE_UNKNOWN or UNKNOWN.
	AnnotationGRPCStatus = "sim.kubeproof.io/grpc-status"
	// AnnotationNetworkFailure (a pod's, never suffixed): setting up the
	// pod sandbox's network fails with this cause (default "simulated
	// network failure"), as a CNI plugin's ADD failing on a containerd
	// node (networkSetupFailed); no sandbox is created.
	AnnotationNetworkFailure = "sim.kubeproof.io/network-failure"
)

// faults is the parsed fault set of one container.
type faults struct {
	exits        bool
	exitAfter    time.Duration
	exitCode     int32
	startFailure string
	slowStop     time.Duration
	stopFailure  string
	probes       map[string]string // kind -> "pass" | "fail" | "fail-after=..."
	logs         []string
	files        []string
	httpStatus   int
	grpcStatus   string
}

// noFaults is the fault set of a container without fault annotations,
// which most containers are: they all point at this one.
var noFaults = faults{httpStatus: 200, grpcStatus: "SERVING"}

// shared returns a pointer to f to keep with a container: noFaults when f
// has none.
func (f faults) shared() *faults {
	if !f.exits && f.exitAfter == 0 && f.exitCode == 0 && f.startFailure == "" && f.slowStop == 0 && f.stopFailure == "" && len(f.probes) == 0 &&
		f.logs == nil && f.files == nil && f.httpStatus == noFaults.httpStatus && f.grpcStatus == noFaults.grpcStatus {
		return &noFaults
	}
	return &f
}

// lookup returns the annotation for container, preferring the
// container-suffixed key.
func lookup(ann map[string]string, key, container string) (string, bool) {
	if v, ok := ann[key+"."+container]; ok {
		return v, true
	}
	v, ok := ann[key]
	return v, ok
}

// parseFaults reads a container's faults from the pod annotations.
func parseFaults(ann map[string]string, container string) (faults, error) {
	f := noFaults
	if v, ok := lookup(ann, AnnotationCrashAfter, container); ok {
		d, err := time.ParseDuration(v)
		if err != nil {
			return f, fmt.Errorf("annotation %s: %w", AnnotationCrashAfter, err)
		}
		f.exits, f.exitAfter, f.exitCode = true, d, 1
	}
	if v, ok := lookup(ann, AnnotationExitAfter, container); ok {
		d, err := time.ParseDuration(v)
		if err != nil {
			return f, fmt.Errorf("annotation %s: %w", AnnotationExitAfter, err)
		}
		f.exits, f.exitAfter = true, d
	}
	if v, ok := lookup(ann, AnnotationExitCode, container); ok {
		c, err := strconv.ParseInt(v, 10, 32)
		if err != nil {
			return f, fmt.Errorf("annotation %s: %w", AnnotationExitCode, err)
		}
		f.exits, f.exitCode = true, int32(c)
	}
	if v, ok := lookup(ann, AnnotationStartFailure, container); ok {
		if v == "" {
			v = "simulated start failure"
		}
		f.startFailure = v
	}
	if v, ok := lookup(ann, AnnotationSlowStop, container); ok {
		d, err := time.ParseDuration(v)
		if err != nil {
			return f, fmt.Errorf("annotation %s: %w", AnnotationSlowStop, err)
		}
		f.slowStop = d
	}
	if v, ok := lookup(ann, AnnotationStopFailure, container); ok {
		if v == "" {
			v = "simulated stop failure"
		}
		f.stopFailure = v
	}
	for kind, key := range map[string]string{"liveness": AnnotationLiveness, "readiness": AnnotationReadiness, "startup": AnnotationStartup} {
		if v, ok := lookup(ann, key, container); ok {
			if _, err := parseProbeOverride(v); err != nil {
				return f, fmt.Errorf("annotation %s: %w", key, err)
			}
			if f.probes == nil {
				f.probes = map[string]string{}
			}
			f.probes[kind] = v
		}
	}
	if v, ok := lookup(ann, AnnotationLogs, container); ok {
		f.logs = strings.Split(v, "\n")
	}
	if v, ok := lookup(ann, AnnotationFiles, container); ok {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				f.files = append(f.files, p)
			}
		}
	}
	if v, ok := lookup(ann, AnnotationHTTPStatus, container); ok {
		c, err := strconv.Atoi(v)
		if err != nil {
			return f, fmt.Errorf("annotation %s: %w", AnnotationHTTPStatus, err)
		}
		f.httpStatus = c
	}
	if v, ok := lookup(ann, AnnotationGRPCStatus, container); ok {
		switch v {
		case "SERVING", "NOT_SERVING", "SERVICE_UNKNOWN", "UNKNOWN":
			f.grpcStatus = v
		default:
			return f, fmt.Errorf("annotation %s: %q is not a grpc.health.v1 serving status", AnnotationGRPCStatus, v)
		}
	}
	return f, nil
}

// parseProbeOverride parses "pass", "fail" or "fail-after=<duration>" into
// the running time after which probes fail (-1: never fail).
func parseProbeOverride(v string) (time.Duration, error) {
	switch {
	case v == "pass":
		return -1, nil
	case v == "fail":
		return 0, nil
	case strings.HasPrefix(v, "fail-after="):
		return time.ParseDuration(strings.TrimPrefix(v, "fail-after="))
	}
	return 0, fmt.Errorf("want pass, fail or fail-after=<duration>, got %q", v)
}
