package sim

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newSim(t *testing.T, cidr string) (*Runtime, *testingclock.FakeClock) {
	t.Helper()
	clk := testingclock.NewFakeClock(t0)
	r, err := New(Config{Clock: clk, PodCIDR: cidr})
	if err != nil {
		t.Fatal(err)
	}
	return r, clk
}

func sandboxConfig(uid string, ann map[string]string) *runtimeapi.PodSandboxConfig {
	return &runtimeapi.PodSandboxConfig{
		Metadata:    &runtimeapi.PodSandboxMetadata{Name: uid, Namespace: "ns", Uid: uid},
		Labels:      map[string]string{runtime.LabelPodUID: uid},
		Annotations: ann,
	}
}

func ip(t *testing.T, r *Runtime, id string) string {
	st, err := r.PodSandboxStatus(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if st.Network == nil {
		return ""
	}
	return st.Network.Ip
}

func TestIPsAreUniqueAndReleased(t *testing.T) {
	ctx := context.Background()
	r, _ := newSim(t, "10.244.3.0/29") // 5 assignable: .2 - .6
	seen := map[string]string{}
	var ids []string
	for i := 0; i < 5; i++ {
		id, err := r.RunPodSandbox(ctx, sandboxConfig(string(rune('a'+i)), nil), "")
		if err != nil {
			t.Fatal(err)
		}
		a := ip(t, r, id)
		if !strings.HasPrefix(a, "10.244.3.") || a == "10.244.3.1" || seen[a] != "" {
			t.Fatalf("ip %q (seen %v)", a, seen)
		}
		seen[a] = id
		ids = append(ids, id)
	}
	if _, err := r.RunPodSandbox(ctx, sandboxConfig("z", nil), ""); err == nil || !strings.Contains(err.Error(), "no IP addresses available") {
		t.Fatalf("exhausted pool: err = %v", err)
	}
	// Stopping releases the IP (CNI DEL); a new sandbox can take it.
	freed := ip(t, r, ids[2])
	if err := r.StopPodSandbox(ctx, ids[2]); err != nil {
		t.Fatal(err)
	}
	id, err := r.RunPodSandbox(ctx, sandboxConfig("y", nil), "")
	if err != nil {
		t.Fatal(err)
	}
	if got := ip(t, r, id); got != freed {
		t.Fatalf("new sandbox got %q, want the released %q", got, freed)
	}
	// Removal of a stopped sandbox does not free the address twice.
	if err := r.RemovePodSandbox(ctx, ids[2]); err != nil {
		t.Fatal(err)
	}
	if _, err := r.RunPodSandbox(ctx, sandboxConfig("x", nil), ""); err == nil {
		t.Fatal("an address was handed out twice")
	}
	// Removing a ready sandbox releases its IP.
	if err := r.RemovePodSandbox(ctx, ids[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := r.RunPodSandbox(ctx, sandboxConfig("w", nil), ""); err != nil {
		t.Fatalf("removal did not release: %v", err)
	}
}

func startContainer(t *testing.T, r *Runtime, ann map[string]string, name string) (string, error) {
	t.Helper()
	id := createContainer(t, r, ann, name, false, false)
	return id, r.StartContainer(context.Background(), id)
}

// createContainer creates container name from busybox:1 in a sandbox of
// its own (pod-<name>, with annotations ann), with stdin and stdinOnce as
// given, and returns its id.
func createContainer(t *testing.T, r *Runtime, ann map[string]string, name string, stdin, stdinOnce bool) string {
	t.Helper()
	ctx := context.Background()
	sb, err := r.RunPodSandbox(ctx, sandboxConfig("pod-"+name, ann), "")
	if err != nil {
		t.Fatal(err)
	}
	img := &runtimeapi.ImageSpec{Image: "busybox:1"}
	if _, err := r.PullImage(ctx, img); err != nil {
		t.Fatal(err)
	}
	id, err := r.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: name}, Image: img,
		Labels: map[string]string{runtime.LabelPodUID: "pod-" + name}, Stdin: stdin, StdinOnce: stdinOnce}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func state(t *testing.T, r *Runtime, id string) *runtimeapi.ContainerStatus {
	st, err := r.ContainerStatus(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestContainerFaults(t *testing.T) {
	r, clk := newSim(t, "10.244.0.0/24")
	id, err := startContainer(t, r, map[string]string{AnnotationCrashAfter: "3s", AnnotationExitCode + ".other": "9"}, "app")
	if err != nil {
		t.Fatal(err)
	}
	if st := state(t, r, id); st.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Fatalf("state %v", st.State)
	}
	clk.Step(3 * time.Second)
	st := state(t, r, id)
	if st.State != runtimeapi.ContainerState_CONTAINER_EXITED || st.ExitCode != 1 || st.Reason != "Error" || st.FinishedAt != t0.Add(3*time.Second).UnixNano() {
		t.Fatalf("after crash: %v %d %q", st.State, st.ExitCode, st.Reason)
	}

	id, err = startContainer(t, r, map[string]string{AnnotationStartFailure: "boom"}, "bad")
	if err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("start failure: %v", err)
	}
	if st := state(t, r, id); st.State != runtimeapi.ContainerState_CONTAINER_EXITED || st.ExitCode != 128 || st.Reason != "StartError" {
		t.Fatalf("after start failure: %+v", st)
	}

	id, _ = startContainer(t, r, map[string]string{AnnotationExitCode: "0"}, "job")
	if st := state(t, r, id); st.State != runtimeapi.ContainerState_CONTAINER_EXITED || st.Reason != "Completed" {
		t.Fatalf("exit-code 0 container: %+v", st)
	}
}

func TestSlowStop(t *testing.T) {
	r, clk := newSim(t, "10.244.0.0/24")
	id, _ := startContainer(t, r, map[string]string{AnnotationSlowStop: "10s"}, "slow")
	done := make(chan error)
	go func() { done <- r.StopContainer(context.Background(), id, 4) }()
	for !clk.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	clk.Step(4 * time.Second)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if st := state(t, r, id); st.ExitCode != 137 {
		t.Fatalf("killed at the timeout: exit %d", st.ExitCode)
	}
}

func TestExecShellAndLogs(t *testing.T) {
	ctx := context.Background()
	r, _ := newSim(t, "10.244.0.0/24")
	id, _ := startContainer(t, r, map[string]string{AnnotationFiles: "/tmp/healthy", AnnotationLogs: "one\ntwo\nthree"}, "app")
	for _, tc := range []struct {
		cmd  []string
		out  string
		code int32
	}{
		{[]string{"true"}, "", 0},
		{[]string{"false"}, "", 1},
		{[]string{"echo", "hi", "there"}, "hi there\n", 0},
		{[]string{"cat", "/tmp/healthy"}, "", 0},
		{[]string{"cat", "/nope"}, "", 1},
		{[]string{"sh", "-c", "echo x > /f && cat /f"}, "x\n", 0},
		{[]string{"/bin/sh", "-c", "rm /tmp/healthy; test -e /tmp/healthy"}, "", 1},
		{[]string{"nosuch"}, "", 127},
	} {
		out, _, code, err := r.ExecSync(ctx, id, tc.cmd, time.Second)
		if err != nil || string(out) != tc.out || code != tc.code {
			t.Errorf("%v: %q %d %v", tc.cmd, out, code, err)
		}
	}
	lines, err := r.ContainerLogs(ctx, id, runtime.LogOptions{TailLines: 2})
	if err != nil || len(lines) != 2 || lines[0].Text != "two" || lines[1].Text != "three" {
		t.Fatalf("logs %+v %v", lines, err)
	}
	if ok, set := r.ProbeOverride(id, runtime.ProbeReadiness); set {
		t.Fatalf("override without annotation: %v", ok)
	}
}

func TestProbeOverride(t *testing.T) {
	r, clk := newSim(t, "10.244.0.0/24")
	id, _ := startContainer(t, r, map[string]string{AnnotationReadiness: "fail", AnnotationLiveness + ".app": "fail-after=5s"}, "app")
	if ok, set := r.ProbeOverride(id, runtime.ProbeReadiness); !set || ok {
		t.Fatal("readiness should fail")
	}
	if ok, set := r.ProbeOverride(id, runtime.ProbeLiveness); !set || !ok {
		t.Fatal("liveness should pass before 5s")
	}
	clk.Step(5 * time.Second)
	if ok, _ := r.ProbeOverride(id, runtime.ProbeLiveness); ok {
		t.Fatal("liveness should fail after 5s")
	}
}

func TestBadAnnotationIsAnError(t *testing.T) {
	r, _ := newSim(t, "10.244.0.0/24")
	ctx := context.Background()
	sb, _ := r.RunPodSandbox(ctx, sandboxConfig("p", map[string]string{AnnotationExitAfter: "soon"}), "")
	img := &runtimeapi.ImageSpec{Image: "i"}
	r.PullImage(ctx, img)
	if _, err := r.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "c"}, Image: img}, nil); err == nil {
		t.Fatal("a malformed fault annotation was accepted")
	}
}

// A container without scripted output or files has written its one start
// line (made when read) and can still write files of its own.
func TestDefaultOutputAndFirstOwnFile(t *testing.T) {
	ctx := context.Background()
	r, clk := newSim(t, "10.244.0.0/24")
	started := clk.Now()
	id, err := startContainer(t, r, nil, "app")
	if err != nil {
		t.Fatal(err)
	}
	clk.Step(time.Minute)
	lines, err := r.ContainerLogs(ctx, id, runtime.LogOptions{})
	want := "simulated container app (image busybox:1) started"
	if err != nil || len(lines) != 1 || lines[0].Text != want || !lines[0].Time.Equal(started) || lines[0].Stream != "stdout" {
		t.Fatalf("logs %+v %v, want one stdout line %q at %s", lines, err, want, started)
	}
	for _, tc := range []struct {
		cmd  []string
		out  string
		code int32
	}{
		{[]string{"cat", "/f"}, "", 1},
		{[]string{"sh", "-c", "echo x > /f && cat /f"}, "x\n", 0},
		{[]string{"sh", "-c", "touch /g; test -e /g"}, "", 0},
		{[]string{"cat", "/f"}, "x\n", 0},
	} {
		out, _, code, err := r.ExecSync(ctx, id, tc.cmd, time.Second)
		if err != nil || string(out) != tc.out || code != tc.code {
			t.Errorf("%v: %q %d %v", tc.cmd, out, code, err)
		}
	}
	if lines, _ := r.ContainerLogs(ctx, id, runtime.LogOptions{Since: started.Add(time.Second)}); len(lines) != 0 {
		t.Errorf("logs since after the start: %+v", lines)
	}
}

// Containers without fault annotations share one fault set; one with
// faults has its own, and the shared one stays fault-free.
func TestContainersWithoutFaultsShareTheirFaultSet(t *testing.T) {
	r, _ := newSim(t, "10.244.0.0/24")
	a := createContainer(t, r, nil, "a", false, false)
	b := createContainer(t, r, nil, "b", false, false)
	c := createContainer(t, r, map[string]string{AnnotationCrashAfter: "5s", AnnotationLogs: "x"}, "c", false, false)
	r.mu.Lock()
	defer r.mu.Unlock()
	ca, _ := r.containerByID(a)
	cb, _ := r.containerByID(b)
	cc, _ := r.containerByID(c)
	if ca.faults != cb.faults {
		t.Error("two containers without faults keep a fault set each")
	}
	fc := cc.faults
	if fc == ca.faults || !fc.exits || fc.exitAfter != 5*time.Second || len(fc.logs) != 1 {
		t.Errorf("faulty container's faults %+v", *fc)
	}
	if f := ca.faults; f.exits || f.logs != nil || f.httpStatus != 200 || f.grpcStatus != "SERVING" {
		t.Errorf("the shared fault set has faults: %+v", *f)
	}
}

// A sandbox keeps its metadata and cgroup parent compactly when the
// kubelet's labels and cgroup layout imply them; what the CRI returns is
// what it was created with either way.
func TestSandboxMetadataAndLinuxRoundTrip(t *testing.T) {
	r, clk := newSim(t, "10.244.9.0/24")
	ctx := context.Background()
	labels := func(name, ns, uid string) map[string]string {
		return map[string]string{runtime.LabelPodName: name, runtime.LabelPodNamespace: ns, runtime.LabelPodUID: uid, "app": "web"}
	}
	configs := []*runtimeapi.PodSandboxConfig{
		{ // as the kubelet creates one
			Metadata: &runtimeapi.PodSandboxMetadata{Name: "web-1", Namespace: "ns", Uid: "u1", Attempt: 2},
			Labels:   labels("web-1", "ns", "u1"),
			Linux:    &runtimeapi.LinuxPodSandboxConfig{CgroupParent: "/kubepods/podu1", Sysctls: map[string]string{"kernel.shm_rmid_forced": "1"}},
		},
		{ // metadata and labels disagree; another cgroup layout
			Metadata: &runtimeapi.PodSandboxMetadata{Name: "other", Namespace: "ns2", Uid: "u2", Attempt: 1},
			Labels:   labels("web-2", "ns", "u2"),
			Linux:    &runtimeapi.LinuxPodSandboxConfig{CgroupParent: "/custom/u2"},
		},
		{Metadata: &runtimeapi.PodSandboxMetadata{Name: "bare", Namespace: "ns", Uid: "u3"}}, // no labels, no Linux config
	}
	for _, cfg := range configs {
		id, err := r.RunPodSandbox(ctx, cfg, "")
		if err != nil {
			t.Fatal(err)
		}
		st, err := r.PodSandboxStatus(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(st.Metadata, cfg.Metadata) || st.CreatedAt != clk.Now().UnixNano() {
			t.Errorf("status metadata %v, created %d; want %v", st.Metadata, st.CreatedAt, cfg.Metadata)
		}
		list, err := r.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{Id: id})
		if err != nil || len(list) != 1 || !proto.Equal(list[0].Metadata, cfg.Metadata) {
			t.Errorf("listed %v (%v); want metadata %v", list, err, cfg.Metadata)
		}
		linux, err := r.SandboxLinux(id)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Linux == nil && linux != nil || cfg.Linux != nil && !proto.Equal(linux, cfg.Linux) {
			t.Errorf("linux config %v, want %v", linux, cfg.Linux)
		}
	}
}

// Containers created with equal configs share one spec; one whose config
// differs in any kept part (here its environment, or its stdin_once) has
// its own, and each reports what it was created with.
func TestContainersOfAWorkloadShareTheirSpec(t *testing.T) {
	ctx := context.Background()
	r, _ := newSim(t, "10.244.0.0/24")
	img := &runtimeapi.ImageSpec{Image: "busybox:1"}
	if _, err := r.PullImage(ctx, img); err != nil {
		t.Fatal(err)
	}
	create := func(pod string, env string, stdinOnce bool) *container {
		t.Helper()
		sb, err := r.RunPodSandbox(ctx, sandboxConfig(pod, nil), "")
		if err != nil {
			t.Fatal(err)
		}
		id, err := r.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: "app"}, Image: img, StdinOnce: stdinOnce,
			Envs:        []*runtimeapi.KeyValue{{Key: "MODE", Value: []byte(env)}},
			Annotations: map[string]string{"io.kubernetes.container.restartCount": "0"},
			Labels:      map[string]string{runtime.LabelPodUID: pod},
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		c, _ := r.containerByID(id)
		return c
	}
	a, b := create("a", "x", false), create("b", "x", false)
	c, d := create("c", "y", false), create("d", "x", true)
	if a.containerSpec != b.containerSpec {
		t.Error("two containers created alike keep a spec each")
	}
	if c.containerSpec == a.containerSpec || d.containerSpec == a.containerSpec {
		t.Error("containers created with different environments or stdin_once share a spec")
	}
	if string(c.env[0].Value) != "y" || string(a.env[0].Value) != "x" || !d.stdinOnce || a.stdinOnce || a.meta.Name != "app" || a.imageRef == "" {
		t.Errorf("specs %+v %+v %+v", *a.containerSpec, *c.containerSpec, *d.containerSpec)
	}
	// Finding a spec already kept (most containers' case) allocates nothing.
	kept := *a.containerSpec
	if n := testing.AllocsPerRun(100, func() { shared.containerSpec(kept) }); n != 0 {
		t.Errorf("looking up a kept spec allocates %v times, want 0", n)
	}
}
