package eviction

import (
	"context"
	"maps"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubeproof/kubeproof/impl/kubelet/podstate"
)

// storagePod is a pod with the given volumes and containers (name:limit,
// "" for no ephemeral-storage limit).
func storagePod(name string, volumes []v1.Volume, containers ...[2]string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Spec: v1.PodSpec{Volumes: volumes}}
	for _, c := range containers {
		ct := v1.Container{Name: c[0]}
		if c[1] != "" {
			ct.Resources.Limits = v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse(c[1])}
		}
		p.Spec.Containers = append(p.Spec.Containers, ct)
	}
	return p
}

func emptyDir(name, limit string, medium v1.StorageMedium) v1.Volume {
	v := v1.Volume{Name: name, VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: medium}}}
	if limit != "" {
		v.EmptyDir.SizeLimit = ptr.To(resource.MustParse(limit))
	}
	return v
}

func TestLocalStorageEvictions(t *testing.T) {
	cache := []v1.Volume{emptyDir("cache", "100Mi", "")}
	for _, tc := range []struct {
		name      string
		pod       *v1.Pod
		storage   *LocalStorage
		dedicated bool
		want      LimitSignal
		message   string
	}{
		{"emptyDir under its limit", storagePod("p", cache, [2]string{"app", ""}),
			&LocalStorage{Volumes: map[string]int64{"cache": 100 * mi}}, false, "", ""},
		{"emptyDir over its limit", storagePod("p", cache, [2]string{"app", ""}),
			&LocalStorage{Volumes: map[string]int64{"cache": 100*mi + 1}}, false,
			LimitEmptyDir, `Usage of EmptyDir volume "cache" exceeds the limit "100Mi". `},
		{"emptyDir not measured", storagePod("p", cache, [2]string{"app", ""}),
			&LocalStorage{}, false, "", ""},
		{"emptyDir without a limit", storagePod("p", []v1.Volume{emptyDir("cache", "", "")}, [2]string{"app", ""}),
			&LocalStorage{Volumes: map[string]int64{"cache": 1 << 40}}, false, "", ""},
		{"emptyDir with a zero limit", storagePod("p", []v1.Volume{emptyDir("cache", "0", "")}, [2]string{"app", ""}),
			&LocalStorage{Volumes: map[string]int64{"cache": 1 << 40}}, false, "", ""},
		{"second emptyDir over", storagePod("p", []v1.Volume{emptyDir("a", "1Gi", ""), emptyDir("b", "1G", "")}, [2]string{"app", ""}),
			&LocalStorage{Volumes: map[string]int64{"a": 1, "b": 1_000_000_001}}, false,
			LimitEmptyDir, `Usage of EmptyDir volume "b" exceeds the limit "1G". `},
		{"no measurement at all", storagePod("p", cache, [2]string{"app", "1Ki"}), nil, false, "", ""},
		{"pod total over the sum of limits", storagePod("p", cache, [2]string{"a", "100Mi"}, [2]string{"b", "100Mi"}),
			// Each container within its own limit; with the emptyDir the
			// pod is over 200Mi.
			&LocalStorage{Volumes: map[string]int64{"cache": 50 * mi}, Rootfs: map[string]int64{"a": 80 * mi, "b": 60 * mi}, Logs: map[string]int64{"a": 15 * mi}}, false,
			LimitPodEphemeral, "Pod ephemeral local storage usage exceeds the total limit of containers 200Mi. "},
		{"pod total: one container's limit counts for all", storagePod("p", nil, [2]string{"a", "100Mi"}, [2]string{"b", ""}),
			&LocalStorage{Rootfs: map[string]int64{"a": 10 * mi, "b": 95 * mi}}, false,
			LimitPodEphemeral, "Pod ephemeral local storage usage exceeds the total limit of containers 100Mi. "},
		{"pod total: the managed hosts file counts", storagePod("p", nil, [2]string{"a", "100Mi"}),
			&LocalStorage{Rootfs: map[string]int64{"a": 100*mi - 100}, EtcHosts: 4096}, false,
			LimitPodEphemeral, "Pod ephemeral local storage usage exceeds the total limit of containers 100Mi. "},
		{"no container sets a limit", storagePod("p", nil, [2]string{"a", ""}),
			&LocalStorage{Rootfs: map[string]int64{"a": 1 << 40}}, false, "", ""},
		{"emptyDir is checked before the pod total", storagePod("p", cache, [2]string{"a", "10Mi"}),
			&LocalStorage{Volumes: map[string]int64{"cache": 200 * mi}}, false,
			LimitEmptyDir, `Usage of EmptyDir volume "cache" exceeds the limit "100Mi". `},
		{"container over its own limit", storagePod("p", nil, [2]string{"a", "100Mi"}, [2]string{"b", "300Mi"}),
			// The pod's total (350Mi) is within 400Mi; a is over 100Mi.
			&LocalStorage{Rootfs: map[string]int64{"a": 90 * mi, "b": 200 * mi}, Logs: map[string]int64{"a": 20 * mi, "b": 40 * mi}}, false,
			LimitContainerEphemeral, `Container a exceeded its local ephemeral storage limit "100Mi". `},
		{"dedicated image filesystem: a container's limit counts its logs only", storagePod("p", nil, [2]string{"a", "100Mi"}, [2]string{"b", "300Mi"}),
			&LocalStorage{Rootfs: map[string]int64{"a": 90 * mi, "b": 200 * mi}, Logs: map[string]int64{"a": 20 * mi, "b": 40 * mi}}, true, "", ""},
		{"dedicated image filesystem: logs over", storagePod("p", nil, [2]string{"a", "100Mi"}, [2]string{"b", "300Mi"}),
			&LocalStorage{Logs: map[string]int64{"a": 101 * mi}}, true,
			LimitContainerEphemeral, `Container a exceeded its local ephemeral storage limit "100Mi". `},
		// Upstream checks every emptyDir's sizeLimit against its measured
		// use, whatever the medium (a tmpfs sized within the limit never
		// exceeds it; a plain directory can).
		{"memory-backed emptyDir over its limit", storagePod("p", []v1.Volume{emptyDir("shm", "1Mi", v1.StorageMediumMemory)}, [2]string{"a", ""}),
			&LocalStorage{Volumes: map[string]int64{"shm": 1 << 30}}, false,
			LimitEmptyDir, `Usage of EmptyDir volume "shm" exceeds the limit "1Mi". `},
		{"huge pages emptyDir over its limit", storagePod("p", []v1.Volume{emptyDir("hp", "1Mi", v1.StorageMediumHugePages)}, [2]string{"a", ""}),
			&LocalStorage{Volumes: map[string]int64{"hp": 1 << 30}}, false,
			LimitEmptyDir, `Usage of EmptyDir volume "hp" exceeds the limit "1Mi". `},
		{"memory-backed emptyDir within its limit", storagePod("p", []v1.Volume{emptyDir("shm", "1Mi", v1.StorageMediumMemory)}, [2]string{"a", ""}),
			&LocalStorage{Volumes: map[string]int64{"shm": 1 * mi}}, false, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := LocalStorageEvictions([]PodStats{{Pod: tc.pod, Storage: tc.storage}}, tc.dedicated)
			if tc.want == "" {
				if len(got) != 0 {
					t.Fatalf("evicted: %+v", got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("evictions %+v, want one", got)
			}
			ev := got[0]
			if ev.Pod != tc.pod || ev.Limit != tc.want || ev.Message != tc.message || ev.GracePeriodSeconds != 1 || ev.Threshold != (Threshold{}) {
				t.Fatalf("eviction %s %q grace %d threshold %+v, want %s %q", ev.Limit, ev.Message, ev.GracePeriodSeconds, ev.Threshold, tc.want, tc.message)
			}
		})
	}
}

// The pod's local ephemeral storage counts the measured use of its
// local ephemeral volumes only, as upstream's IsLocalEphemeralVolume: a
// disk-backed emptyDir, a configMap and a gitRepo volume; not a
// memory-backed or huge pages emptyDir, nor a secret, downwardAPI,
// projected or hostPath volume, whatever a provider measured for them.
func TestPodTotalCountsLocalEphemeralVolumes(t *testing.T) {
	volumes := []v1.Volume{
		emptyDir("cache", "", ""),
		{Name: "conf", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "c"}}}},
		{Name: "repo", VolumeSource: v1.VolumeSource{GitRepo: &v1.GitRepoVolumeSource{Repository: "https://example.com/r.git"}}},
		emptyDir("shm", "", v1.StorageMediumMemory),
		emptyDir("hp", "", v1.StorageMediumHugePages),
		{Name: "tok", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "s"}}},
		{Name: "dapi", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{}}},
		{Name: "proj", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{}}},
		{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/tmp"}}},
	}
	used := map[string]int64{}
	for _, v := range volumes {
		used[v.Name] = 10 * mi
	}
	// Counted: cache, conf and repo (30Mi) and the writable layer (5Mi).
	storage := &LocalStorage{Volumes: used, Rootfs: map[string]int64{"a": 5 * mi}}
	for _, tc := range []struct {
		limit string
		want  LimitSignal
	}{{"35Mi", ""}, {"36700159", LimitPodEphemeral}} { // 35Mi, and a byte less
		p := storagePod("p", volumes, [2]string{"a", tc.limit})
		var got []LimitSignal
		for _, ev := range LocalStorageEvictions([]PodStats{{Pod: p, Storage: storage}}, true) {
			got = append(got, ev.Limit)
		}
		switch {
		case tc.want == "" && len(got) != 0:
			t.Errorf("limit %s: evicted for %v (the total counted volumes that are no local ephemeral storage)", tc.limit, got)
		case tc.want != "" && (len(got) != 1 || got[0] != tc.want):
			t.Errorf("limit %s: evictions for %v, want %s", tc.limit, got, tc.want)
		}
	}
}

func TestPodEphemeralLimit(t *testing.T) {
	always := ptr.To(v1.ContainerRestartPolicyAlways)
	lim := func(q string) v1.ResourceRequirements {
		return v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse(q)}}
	}
	for _, tc := range []struct {
		name  string
		spec  v1.PodSpec
		want  string
		found bool
	}{
		{"none", v1.PodSpec{Containers: []v1.Container{{Name: "a"}}}, "0", false},
		{"sum of app containers", v1.PodSpec{Containers: []v1.Container{{Name: "a", Resources: lim("1Gi")}, {Name: "b", Resources: lim("1Gi")}, {Name: "c"}}}, "2Gi", true},
		{"a larger init container", v1.PodSpec{
			InitContainers: []v1.Container{{Name: "i", Resources: lim("3Gi")}},
			Containers:     []v1.Container{{Name: "a", Resources: lim("1Gi")}}}, "3Gi", true},
		{"sidecars add to the app containers and to later init containers", v1.PodSpec{
			InitContainers: []v1.Container{{Name: "s", RestartPolicy: always, Resources: lim("1Gi")}, {Name: "i", Resources: lim("2Gi")}},
			Containers:     []v1.Container{{Name: "a", Resources: lim("1Gi")}}}, "3Gi", true},
		{"only an init container sets one", v1.PodSpec{
			InitContainers: []v1.Container{{Name: "i", Resources: lim("5Mi")}},
			Containers:     []v1.Container{{Name: "a"}}}, "5Mi", true},
	} {
		got, found := podEphemeralLimit(&v1.Pod{Spec: tc.spec})
		if found != tc.found || got.String() != tc.want {
			t.Errorf("%s: %s %v, want %s %v", tc.name, got.String(), found, tc.want, tc.found)
		}
	}
}

// Pods over a local storage limit are all evicted in one interval, before
// and instead of a threshold's eviction; critical pods never; the
// configuration can turn the check off.
func TestDecideLocalStorageFirst(t *testing.T) {
	cfg := mustConfig(t, Flags{Hard: "memory.available<100Mi", HardSet: true})
	cache := []v1.Volume{emptyDir("cache", "1Mi", "")}
	over1 := storagePod("over-1", cache, [2]string{"app", ""})
	over2 := storagePod("over-2", nil, [2]string{"app", "1Mi"})
	critical := storagePod("critical", cache, [2]string{"app", ""})
	critical.Spec.Priority = ptr.To(int32(2000000000))
	hog := pod("hog", 0, 0)
	full := &LocalStorage{Volumes: map[string]int64{"cache": 2 * mi}, Rootfs: map[string]int64{"app": 2 * mi}}
	stats := []PodStats{
		{Pod: over1, Storage: full, Memory: map[string]int64{}},
		{Pod: critical, Storage: full, Memory: map[string]int64{}},
		memStats(hog, 900*mi),
		{Pod: over2, Storage: full, Memory: map[string]int64{}},
	}
	d := Decide(Input{Config: cfg, Observations: memObs(50 * mi), Pods: stats, Now: t0})
	if len(d.LocalStorage) != 2 || d.LocalStorage[0].Pod != over1 || d.LocalStorage[1].Pod != over2 {
		t.Fatalf("local storage evictions %+v", d.LocalStorage)
	}
	if d.Evict != nil || d.Threshold != nil {
		t.Fatalf("threshold eviction too: %+v %+v", d.Threshold, d.Evict)
	}
	// The threshold is remembered and reported all the same.
	if !slices.Contains(d.Conditions, v1.NodeMemoryPressure) || len(d.State.Met) != 1 {
		t.Fatalf("conditions %v met %v", d.Conditions, d.State.Met)
	}
	// Next interval, those pods gone: the threshold's eviction.
	d = Decide(Input{Config: cfg, Observations: memObs(50 * mi), Pods: stats[1:3], State: d.State, Now: t0.Add(10e9)})
	if len(d.LocalStorage) != 0 || d.Evict == nil || d.Evict.Pod != hog {
		t.Fatalf("second interval: %+v %+v", d.LocalStorage, d.Evict)
	}
	cfg.DisableLocalStorageCapacityIsolation = true
	if d := Decide(Input{Config: cfg, Observations: memObs(500 * mi), Pods: stats, Now: t0}); len(d.LocalStorage) != 0 {
		t.Fatalf("evicted with local storage isolation off: %+v", d.LocalStorage)
	}
}

// A simulated pod's local storage comes from its annotations; its disk
// use for ranking too once any is set.
func TestSimProviderLocalStorage(t *testing.T) {
	p := storagePod("p", []v1.Volume{emptyDir("cache", "1Gi", ""), emptyDir("shm", "", v1.StorageMediumMemory)}, [2]string{"a", ""}, [2]string{"b", ""})
	p.Spec.Volumes = append(p.Spec.Volumes,
		v1.Volume{Name: "conf", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{}}},
		v1.Volume{Name: "tok", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{}}})
	p.Annotations = map[string]string{
		AnnotationEmptyDirUsage + ".cache":        "300Mi",
		AnnotationEmptyDirUsage + ".shm":          "1Gi",
		AnnotationConfigMapUsage + ".conf":        "50Mi",
		AnnotationConfigMapUsage + ".tok":         "1Gi",
		AnnotationEmptyDirUsage + ".conf":         "1Gi",
		AnnotationEphemeralStorageUsage:           "10Mi",
		AnnotationEphemeralStorageUsage + ".b":    "20Mi",
		AnnotationEphemeralStorageUsage + ".none": "1Gi",
	}
	plain := storagePod("plain", nil, [2]string{"a", ""})
	plain.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("5Mi")}
	sim := NewSimProvider(resource.MustParse("4Gi"), resource.MustParse("100Gi"))
	_, stats, err := sim.Observe(context.Background(), []*v1.Pod{p, plain})
	if err != nil {
		t.Fatal(err)
	}
	// Every emptyDir (its sizeLimit is checked whatever the medium) and
	// the configMap are measured, each from its own kind's annotation;
	// the memory-backed emptyDir is no local ephemeral storage.
	s := stats[0].Storage
	if s.Volumes["cache"] != 300*mi || s.Volumes["shm"] != 1024*mi || s.Volumes["conf"] != 50*mi || len(s.Volumes) != 3 || s.Rootfs["a"] != 10*mi || s.Rootfs["b"] != 20*mi || len(s.Rootfs) != 2 {
		t.Fatalf("storage %+v", s)
	}
	if stats[0].Disk != 380*mi {
		t.Fatalf("disk %d, want 380Mi (cache, conf and the writable layers)", stats[0].Disk)
	}
	if stats[1].Storage == nil || stats[1].Storage.total(plain) != 0 || stats[1].Disk != 5*mi {
		t.Fatalf("plain pod: %+v disk %d", stats[1].Storage, stats[1].Disk)
	}
}

// podStates is a runtime's view of pods: their containers by name, each
// in one state (newest instance).
type podStates map[string]map[string]podstate.ContainerState

func (r podStates) PodState(_ context.Context, uid string) (*podstate.Pod, error) {
	ps := &podstate.Pod{}
	for name, state := range r[uid] {
		ps.Containers = append(ps.Containers, podstate.Container{Name: name, State: state})
	}
	return ps, nil
}

// A simulated pod's containers of every kind report their writable layer
// and logs (AnnotationEphemeralStorageUsage.<container>), counted while
// the runtime runs them, as upstream's pod stats list only running
// containers (removeTerminatedContainers): a running sidecar, a running
// init container and a running ephemeral container count towards the
// pod's local ephemeral storage; a completed init container and an
// exited app container do not. Without a runtime every annotated
// container counts.
func TestSimProviderLocalStorageRunningContainers(t *testing.T) {
	p := storagePod("p", nil, [2]string{"app", "1Gi"}, [2]string{"done", ""})
	p.UID = "uid-p"
	p.Spec.InitContainers = []v1.Container{
		{Name: "proxy", RestartPolicy: ptr.To(v1.ContainerRestartPolicyAlways)},
		{Name: "setup"},
		{Name: "migrate"},
	}
	p.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug"}}}
	p.Annotations = map[string]string{
		AnnotationEphemeralStorageUsage + ".app":     "100Mi",
		AnnotationEphemeralStorageUsage + ".done":    "1Gi",
		AnnotationEphemeralStorageUsage + ".proxy":   "2Gi",
		AnnotationEphemeralStorageUsage + ".setup":   "4Gi",
		AnnotationEphemeralStorageUsage + ".migrate": "8Gi",
		AnnotationEphemeralStorageUsage + ".debug":   "16Mi",
	}
	states := podStates{"uid-p": {
		"app": podstate.ContainerRunning, "done": podstate.ContainerExited, "proxy": podstate.ContainerRunning,
		"setup": podstate.ContainerExited, "migrate": podstate.ContainerRunning, "debug": podstate.ContainerRunning,
	}}
	sim := NewSimProvider(resource.MustParse("4Gi"), resource.MustParse("100Gi"))
	sim.SetPodStates(states)
	_, stats, err := sim.Observe(context.Background(), []*v1.Pod{p})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"app": 100 * mi, "proxy": 2048 * mi, "migrate": 8192 * mi, "debug": 16 * mi}
	if got := stats[0].Storage.Rootfs; !maps.Equal(got, want) {
		t.Fatalf("counted %v, want the running containers' %v", got, want)
	}
	if stats[0].Disk != (100+2048+8192+16)*mi {
		t.Fatalf("disk %d", stats[0].Disk)
	}
	// Over the pod's 1Gi limit (the app's; the sidecar sets none) by the
	// running sidecar's and init container's use, not the app's own.
	ev := LocalStorageEvictions(stats, false)
	if len(ev) != 1 || ev[0].Limit != LimitPodEphemeral {
		t.Fatalf("evictions %+v, want the pod's limit", ev)
	}

	// Once only the app runs, its use alone is within the limit.
	states["uid-p"] = map[string]podstate.ContainerState{"app": podstate.ContainerRunning, "proxy": podstate.ContainerExited}
	if _, stats, err = sim.Observe(context.Background(), []*v1.Pod{p}); err != nil {
		t.Fatal(err)
	}
	if got := stats[0].Storage.Rootfs; !maps.Equal(got, map[string]int64{"app": 100 * mi}) {
		t.Fatalf("counted %v, want the app's alone", got)
	}
	if ev := LocalStorageEvictions(stats, false); len(ev) != 0 {
		t.Fatalf("evictions %+v, want none", ev)
	}

	// Without a runtime to ask, every annotated container counts.
	if _, stats, err = NewSimProvider(resource.MustParse("4Gi"), resource.MustParse("100Gi")).Observe(context.Background(), []*v1.Pod{p}); err != nil {
		t.Fatal(err)
	}
	if got := len(stats[0].Storage.Rootfs); got != 6 {
		t.Fatalf("counted %v, want all six containers", stats[0].Storage.Rootfs)
	}
}
