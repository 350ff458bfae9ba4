package status

import (
	"math/rand"
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/kubeproof/kubeproof/impl/kubelet/podstate"
	"github.com/kubeproof/kubeproof/impl/kubelet/podsync"
)

var now = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func running() v1.ContainerState {
	return v1.ContainerState{Running: &v1.ContainerStateRunning{}}
}
func terminated(code int32) v1.ContainerState {
	return v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: code}}
}
func waiting() v1.ContainerState { return v1.ContainerState{Waiting: &v1.ContainerStateWaiting{}} }

func cs(name string, st v1.ContainerState, last ...v1.ContainerState) v1.ContainerStatus {
	s := v1.ContainerStatus{Name: name, State: st}
	if len(last) > 0 {
		s.LastTerminationState = last[0]
	}
	return s
}

func TestGetPhase(t *testing.T) {
	two := func(policy v1.RestartPolicy, inits int) *v1.Pod {
		p := &v1.Pod{Spec: v1.PodSpec{RestartPolicy: policy, Containers: []v1.Container{{Name: "a"}, {Name: "b"}}}}
		if inits > 0 {
			p.Spec.InitContainers = []v1.Container{{Name: "i"}}
		}
		return p
	}
	for _, tc := range []struct {
		name     string
		pod      *v1.Pod
		init     []v1.ContainerStatus
		app      []v1.ContainerStatus
		terminal bool
		want     v1.PodPhase
	}{
		{"nothing yet", two(v1.RestartPolicyAlways, 0), nil, nil, false, v1.PodPending},
		{"one waiting", two(v1.RestartPolicyAlways, 0), nil, []v1.ContainerStatus{cs("a", running()), cs("b", waiting())}, false, v1.PodPending},
		{"all running", two(v1.RestartPolicyAlways, 0), nil, []v1.ContainerStatus{cs("a", running()), cs("b", running())}, false, v1.PodRunning},
		{"one restarting in back-off", two(v1.RestartPolicyAlways, 0), nil, []v1.ContainerStatus{cs("a", running()), cs("b", waiting(), terminated(1))}, false, v1.PodRunning},
		{"Always, all exited", two(v1.RestartPolicyAlways, 0), nil, []v1.ContainerStatus{cs("a", terminated(0)), cs("b", terminated(1))}, false, v1.PodRunning},
		{"Never, all succeeded", two(v1.RestartPolicyNever, 0), nil, []v1.ContainerStatus{cs("a", terminated(0)), cs("b", terminated(0))}, false, v1.PodSucceeded},
		{"Never, one failed", two(v1.RestartPolicyNever, 0), nil, []v1.ContainerStatus{cs("a", terminated(0)), cs("b", terminated(2))}, false, v1.PodFailed},
		{"OnFailure, one failed", two(v1.RestartPolicyOnFailure, 0), nil, []v1.ContainerStatus{cs("a", terminated(0)), cs("b", terminated(2))}, false, v1.PodRunning},
		{"OnFailure, all succeeded", two(v1.RestartPolicyOnFailure, 0), nil, []v1.ContainerStatus{cs("a", terminated(0)), cs("b", terminated(0))}, false, v1.PodSucceeded},
		{"Always, terminal, all 0", two(v1.RestartPolicyAlways, 0), nil, []v1.ContainerStatus{cs("a", terminated(0)), cs("b", terminated(0))}, true, v1.PodSucceeded},
		{"Always, terminal, one 137", two(v1.RestartPolicyAlways, 0), nil, []v1.ContainerStatus{cs("a", terminated(0)), cs("b", terminated(137))}, true, v1.PodFailed},
		{"init running", two(v1.RestartPolicyAlways, 1), []v1.ContainerStatus{cs("i", running())}, []v1.ContainerStatus{cs("a", waiting()), cs("b", waiting())}, false, v1.PodPending},
		{"init failed, Never", two(v1.RestartPolicyNever, 1), []v1.ContainerStatus{cs("i", terminated(1))}, []v1.ContainerStatus{cs("a", waiting()), cs("b", waiting())}, false, v1.PodFailed},
		{"init failed, Always: pending", two(v1.RestartPolicyAlways, 1), []v1.ContainerStatus{cs("i", waiting(), terminated(1))}, []v1.ContainerStatus{cs("a", waiting()), cs("b", waiting())}, false, v1.PodPending},
		{"unknown container", two(v1.RestartPolicyAlways, 0), nil, []v1.ContainerStatus{cs("a", running())}, false, v1.PodPending},
	} {
		if got := GetPhase(tc.pod, tc.init, tc.app, tc.terminal); got != tc.want {
			t.Errorf("%s: phase %s, want %s", tc.name, got, tc.want)
		}
	}
}

func basePod() *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"},
		Spec:       v1.PodSpec{RestartPolicy: v1.RestartPolicyAlways, Containers: []v1.Container{{Name: "a", Image: "img"}}},
	}
}

func runtimeWith(cs ...podstate.Container) *podstate.Pod {
	return &podstate.Pod{UID: "u", Sandboxes: []podstate.Sandbox{{ID: "s", Ready: true, IP: "10.0.0.9"}}, Containers: cs}
}

func find2(s v1.PodStatus, t v1.PodConditionType) v1.PodCondition {
	for _, c := range s.Conditions {
		if c.Type == t {
			return c
		}
	}
	return v1.PodCondition{}
}

func TestGenerateAPIPodStatus(t *testing.T) {
	started := now.Add(-time.Minute)
	run := podstate.Container{ID: "c1", Name: "a", SandboxID: "s", State: podstate.ContainerRunning, StartedAt: started, ImageRef: "sha256:x"}

	t.Run("running and ready", func(t *testing.T) {
		s := GenerateAPIPodStatus(Input{Pod: basePod(), Runtime: runtimeWith(run), RuntimeType: "sim", HostIPs: []string{"1.2.3.4"}, Now: now})
		if s.Phase != v1.PodRunning || s.PodIP != "10.0.0.9" || s.HostIP != "1.2.3.4" || s.StartTime == nil || !s.StartTime.Time.Equal(now) {
			t.Fatalf("%+v", s)
		}
		c := s.ContainerStatuses[0]
		if !c.Ready || c.ContainerID != "sim://c1" || c.ImageID != "sha256:x" || !*c.Started || !c.State.Running.StartedAt.Time.Equal(started) {
			t.Fatalf("%+v", c)
		}
		for _, ct := range []v1.PodConditionType{PodReadyToStartContainers, v1.PodInitialized, v1.ContainersReady, v1.PodReady, v1.PodScheduled} {
			if find2(s, ct).Status != v1.ConditionTrue {
				t.Errorf("%s not True", ct)
			}
		}
	})
	t.Run("image and imageID as the runtime reports them", func(t *testing.T) {
		// As upstream's convertContainerStatus: containerd's repo tag and
		// repo digest, not the spec's image; the spec's before the
		// container exists.
		reported := run
		reported.Image, reported.ImageRef = "docker.io/library/img:latest", "docker.io/library/img@sha256:x"
		s := GenerateAPIPodStatus(Input{Pod: basePod(), Runtime: runtimeWith(reported), RuntimeType: "sim", Now: now})
		if c := s.ContainerStatuses[0]; c.Image != reported.Image || c.ImageID != reported.ImageRef {
			t.Fatalf("image %q imageID %q, want %q %q", c.Image, c.ImageID, reported.Image, reported.ImageRef)
		}
		s = GenerateAPIPodStatus(Input{Pod: basePod(), Runtime: runtimeWith(), RuntimeType: "sim", Now: now})
		if c := s.ContainerStatuses[0]; c.Image != "img" || c.ImageID != "" {
			t.Fatalf("before the container: image %q imageID %q, want the spec's img", c.Image, c.ImageID)
		}
	})
	t.Run("host network: the node's IPs", func(t *testing.T) {
		p := basePod()
		p.Spec.HostNetwork = true
		s := GenerateAPIPodStatus(Input{Pod: p, Runtime: runtimeWith(run), RuntimeType: "sim", HostIPs: []string{"1.2.3.4"}, Now: now})
		if s.PodIP != "1.2.3.4" || len(s.PodIPs) != 1 || s.PodIPs[0].IP != "1.2.3.4" {
			t.Fatalf("podIP %q podIPs %v, want the host's 1.2.3.4", s.PodIP, s.PodIPs)
		}
	})
	t.Run("readiness probe gates Ready; transition time kept", func(t *testing.T) {
		p := basePod()
		p.Spec.Containers[0].ReadinessProbe = &v1.Probe{}
		earlier := metav1.NewTime(now.Add(-time.Hour))
		p.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionFalse, LastTransitionTime: earlier}}
		s := GenerateAPIPodStatus(Input{Pod: p, Runtime: runtimeWith(run), Probes: map[string]podstate.ContainerProbes{"c1": {Readiness: podstate.ProbeFailure}}, Now: now})
		r := find2(s, v1.PodReady)
		if r.Status != v1.ConditionFalse || r.Reason != ReasonContainersNotReady || !r.LastTransitionTime.Equal(&earlier) {
			t.Fatalf("%+v", r)
		}
		s = GenerateAPIPodStatus(Input{Pod: p, Runtime: runtimeWith(run), Probes: map[string]podstate.ContainerProbes{"c1": {Readiness: podstate.ProbeSuccess}}, Now: now})
		if r := find2(s, v1.PodReady); r.Status != v1.ConditionTrue || !r.LastTransitionTime.Time.Equal(now) {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("startup probe gates started and ready", func(t *testing.T) {
		p := basePod()
		p.Spec.Containers[0].StartupProbe = &v1.Probe{}
		s := GenerateAPIPodStatus(Input{Pod: p, Runtime: runtimeWith(run), Now: now})
		if c := s.ContainerStatuses[0]; *c.Started || c.Ready {
			t.Fatalf("%+v", c)
		}
	})
	t.Run("no sandbox yet: ContainerCreating", func(t *testing.T) {
		s := GenerateAPIPodStatus(Input{Pod: basePod(), Runtime: &podstate.Pod{}, Now: now})
		if s.Phase != v1.PodPending || s.ContainerStatuses[0].State.Waiting.Reason != ReasonContainerCreating ||
			find2(s, PodReadyToStartContainers).Status != v1.ConditionFalse {
			t.Fatalf("%+v", s)
		}
	})
	t.Run("crash loop: waiting with last state", func(t *testing.T) {
		old := podstate.Container{ID: "c1", Name: "a", SandboxID: "s", State: podstate.ContainerExited, ExitCode: 2, Attempt: 4, FinishedAt: now}
		s := GenerateAPIPodStatus(Input{Pod: basePod(), Runtime: runtimeWith(old), RuntimeType: "sim", Now: now,
			Waiting: map[string]podstate.Waiting{"a": {Reason: "CrashLoopBackOff", Message: "m"}}})
		c := s.ContainerStatuses[0]
		if c.State.Waiting == nil || c.State.Waiting.Reason != "CrashLoopBackOff" || c.LastTerminationState.Terminated.ExitCode != 2 ||
			c.LastTerminationState.Terminated.Reason != "Error" || c.RestartCount != 4 || s.Phase != v1.PodRunning {
			t.Fatalf("%s %+v", s.Phase, c)
		}
	})
	t.Run("terminal phase is final", func(t *testing.T) {
		p := basePod()
		p.Status.Phase, p.Status.Reason = v1.PodFailed, "DeadlineExceeded"
		s := GenerateAPIPodStatus(Input{Pod: p, Runtime: runtimeWith(run), Now: now})
		if s.Phase != v1.PodFailed || s.Reason != "DeadlineExceeded" {
			t.Fatalf("%s %s", s.Phase, s.Reason)
		}
	})
	t.Run("kubelet-decided terminal", func(t *testing.T) {
		s := GenerateAPIPodStatus(Input{Pod: basePod(), Runtime: runtimeWith(run), Now: now, PodIsTerminal: true,
			Terminal: &podsync.Terminal{Phase: v1.PodFailed, Reason: "DeadlineExceeded", Message: "m"}})
		if s.Phase != v1.PodFailed || s.Reason != "DeadlineExceeded" || find2(s, v1.PodReady).Reason != ReasonPodFailed {
			t.Fatalf("%+v", s)
		}
	})
	// While the pod could have running containers (not PodIsTerminal) a
	// terminal phase, decided or by restart policy, is held back: the old
	// phase, reason and message stay, the conditions are those of the
	// terminal phase (upstream's generateAPIPodStatus, then its status
	// manager's mergePodStatus), a decided DisruptionTarget is left out.
	t.Run("terminal phase held back", func(t *testing.T) {
		p := basePod()
		p.Status.Phase, p.Status.Reason, p.Status.Message = v1.PodRunning, "r", "m0"
		dt := &v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: "TerminationByKubelet"}
		s := GenerateAPIPodStatus(Input{Pod: p, Runtime: runtimeWith(run), Now: now,
			Terminal: &podsync.Terminal{Phase: v1.PodFailed, Reason: "Evicted", Message: "m", Condition: dt}})
		if s.Phase != v1.PodRunning || s.Reason != "r" || s.Message != "m0" || find2(s, v1.PodReady).Reason != ReasonPodFailed ||
			find2(s, v1.DisruptionTarget).Type != "" {
			t.Fatalf("decided: %+v", s)
		}
		p.Spec.RestartPolicy = v1.RestartPolicyNever
		exited := podstate.Container{ID: "c1", Name: "a", SandboxID: "s", State: podstate.ContainerExited, ExitCode: 0}
		s = GenerateAPIPodStatus(Input{Pod: p, Runtime: runtimeWith(exited), Now: now})
		if s.Phase != v1.PodRunning || s.Reason != "r" || s.ContainerStatuses[0].State.Terminated == nil ||
			find2(s, v1.ContainersReady).Reason != ReasonPodCompleted {
			t.Fatalf("by restart policy: %+v", s)
		}
		s = GenerateAPIPodStatus(Input{Pod: p, Runtime: runtimeWith(exited), Now: now, PodIsTerminal: true})
		if s.Phase != v1.PodSucceeded || s.Reason != "" {
			t.Fatalf("once terminal: %+v", s)
		}
	})
	t.Run("readiness gate", func(t *testing.T) {
		p := basePod()
		p.Spec.ReadinessGates = []v1.PodReadinessGate{{ConditionType: "example.com/lb"}}
		s := GenerateAPIPodStatus(Input{Pod: p, Runtime: runtimeWith(run), Now: now})
		if r := find2(s, v1.PodReady); r.Status != v1.ConditionFalse || r.Reason != ReasonReadinessGatesNotReady ||
			r.Message != `corresponding condition of pod readiness gate "example.com/lb" does not exist.` {
			t.Fatalf("%+v", r)
		}
		p.Status.Conditions = []v1.PodCondition{{Type: "example.com/lb", Status: v1.ConditionTrue}}
		s = GenerateAPIPodStatus(Input{Pod: p, Runtime: runtimeWith(run), Now: now})
		if find2(s, v1.PodReady).Status != v1.ConditionTrue || find2(s, "example.com/lb").Status != v1.ConditionTrue {
			t.Fatalf("%+v", s.Conditions)
		}
	})
}

func TestEqualIgnoresSubSecondTimes(t *testing.T) {
	a := v1.PodStatus{StartTime: &metav1.Time{Time: now.Add(300 * time.Millisecond)}}
	b := v1.PodStatus{StartTime: &metav1.Time{Time: now}}
	if !Equal(&a, &b) {
		t.Fatal("statuses differing below a second compare unequal")
	}
	b.Phase = v1.PodRunning
	if Equal(&a, &b) {
		t.Fatal("different phases compare equal")
	}
}

// Equal compares an already normalized status (as read from the API) as
// it is and a generated one (sub-second runtime times) once truncated,
// without changing either.
func TestEqualNormalizedAndGeneratedStatuses(t *testing.T) {
	whole := now.Truncate(time.Second)
	api := v1.PodStatus{
		Phase: v1.PodRunning, StartTime: &metav1.Time{Time: whole},
		Conditions:        []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: metav1.Time{Time: whole}}},
		ContainerStatuses: []v1.ContainerStatus{{Name: "app", State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.Time{Time: whole.Local()}}}}},
	}
	gen := *api.DeepCopy()
	gen.ContainerStatuses[0].State.Running.StartedAt = metav1.Time{Time: whole.Add(700 * time.Millisecond)}
	gen.Conditions[0].LastTransitionTime = metav1.Time{Time: whole.Add(time.Millisecond)}
	before := *gen.DeepCopy()
	if !normalized(&api) || normalized(&gen) {
		t.Fatalf("normalized: API status %v, generated %v", normalized(&api), normalized(&gen))
	}
	if !Equal(&api, &gen) || !Equal(&gen, &api) {
		t.Fatal("statuses equal to the second compare unequal")
	}
	if !reflect.DeepEqual(gen, before) {
		t.Fatal("Equal changed its argument")
	}
	gen.ContainerStatuses[0].State.Running.StartedAt = metav1.Time{Time: whole.Add(time.Second)}
	if Equal(&api, &gen) {
		t.Fatal("start times a second apart compare equal")
	}
	other := *api.DeepCopy()
	other.ContainerStatuses[0].Ready = true
	if Equal(&api, &other) {
		t.Fatal("normalized statuses that differ compare equal")
	}
}

// Equal's shortcut (equal protobuf encodings) never says "equal" where
// Semantic.DeepEqual would not, and Equal's answer is Semantic.DeepEqual's
// on random statuses: each compared with an exact copy, with a copy one
// random field apart (a fresh fill of one status), and with unrelated
// ones.
func TestEqualMatchesSemanticDeepEqual(t *testing.T) {
	f := fuzzer.FuzzerFor(metafuzzer.Funcs, rand.NewSource(7), scheme.Codecs).NilChance(0.3).NumElements(0, 2)
	var statuses []v1.PodStatus
	for i := 0; i < 200; i++ {
		var s v1.PodStatus
		f.Fill(&s)
		Normalize(&s)
		statuses = append(statuses, s)
	}
	for i := range statuses {
		a := &statuses[i]
		same := a.DeepCopy()
		if !SameEncoding(a, same) || !Equal(a, same) {
			t.Fatalf("status %d differs from its copy", i)
		}
		// One container status's readiness flipped, the phase changed, a
		// condition's time a second later: each a difference.
		for _, change := range []func(*v1.PodStatus){
			func(s *v1.PodStatus) { s.Phase += "x" },
			func(s *v1.PodStatus) {
				if len(s.ContainerStatuses) > 0 {
					s.ContainerStatuses[0].Ready = !s.ContainerStatuses[0].Ready
				} else {
					s.ContainerStatuses = []v1.ContainerStatus{{Name: "c"}}
				}
			},
			func(s *v1.PodStatus) {
				if len(s.Conditions) > 0 {
					s.Conditions[0].LastTransitionTime = metav1.NewTime(s.Conditions[0].LastTransitionTime.Add(time.Second))
				} else {
					s.Conditions = []v1.PodCondition{{Type: v1.PodReady}}
				}
			},
		} {
			b := a.DeepCopy()
			change(b)
			if Equal(a, b) || SameEncoding(a, b) {
				t.Fatalf("status %d equal to a changed copy", i)
			}
		}
		b := &statuses[(i+1)%len(statuses)]
		if got, want := Equal(a, b), apiequality.Semantic.DeepEqual(a, b); got != want {
			t.Fatalf("statuses %d and %d: Equal %v, Semantic.DeepEqual %v", i, i+1, got, want)
		}
		if SameEncoding(a, b) && !apiequality.Semantic.DeepEqual(a, b) {
			t.Fatalf("statuses %d and %d: same encoding, not semantically equal", i, i+1)
		}
	}
	// Where the encodings differ but the values are the same, Semantic's
	// answer stands: a quantity written another way, an empty list for a
	// missing one, the same instant in another location.
	a := v1.PodStatus{Phase: v1.PodRunning, StartTime: &metav1.Time{Time: now},
		ContainerStatuses: []v1.ContainerStatus{{Name: "c", AllocatedResources: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}}}}
	b := *a.DeepCopy()
	b.ContainerStatuses[0].AllocatedResources = v1.ResourceList{v1.ResourceCPU: resource.MustParse("1000m")}
	b.Conditions = []v1.PodCondition{}
	b.StartTime = &metav1.Time{Time: now.In(time.FixedZone("x", 3600))}
	if !Equal(&a, &b) {
		t.Fatal("statuses equal in value but not in encoding compare unequal")
	}
}

// Normalize keeps the instant metav1.Time.Rfc3339Copy keeps (what the API
// stores), for times with and without sub-second parts, in any zone and
// before 1970, and never changes a start time it may share with the old
// status.
func TestNormalizeTruncatesAsTheAPIStores(t *testing.T) {
	zone := time.FixedZone("x", -7*3600-1800)
	for _, at := range []time.Time{
		now, now.Add(999 * time.Millisecond), now.Add(time.Nanosecond), now.In(zone).Add(250 * time.Millisecond),
		time.Now(), time.Date(1969, 12, 31, 23, 59, 59, 500_000_000, time.UTC), now.Local().Add(time.Microsecond),
	} {
		shared := metav1.NewTime(at)
		s := v1.PodStatus{
			StartTime:         &shared,
			Conditions:        []v1.PodCondition{{Type: v1.PodReady, LastTransitionTime: metav1.NewTime(at), LastProbeTime: metav1.NewTime(at)}},
			ContainerStatuses: []v1.ContainerStatus{{State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(at)}}}},
		}
		Normalize(&s)
		want := metav1.NewTime(at).Rfc3339Copy()
		for _, got := range []metav1.Time{*s.StartTime, s.Conditions[0].LastTransitionTime, s.Conditions[0].LastProbeTime, s.ContainerStatuses[0].State.Running.StartedAt} {
			if !got.Equal(&want) {
				t.Errorf("Normalize(%v) = %v, want %v", at, got, want)
			}
		}
		if !shared.Time.Equal(at) {
			t.Errorf("Normalize changed the shared start time %v to %v", at, shared)
		}
	}
}
