package scheduler

import (
	"context"
	"io"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/scheduler/config"
)

func TestTwoProfilesInOneScheduler(t *testing.T) {
	c := newFakeCluster()
	createNode(t, c, makeNode("empty", "8", "16Gi", 110, nil))
	createNode(t, c, makeNode("busy", "8", "16Gi", 110, nil))
	filler := makePod("default", "filler", "6", "1Gi")
	filler.Spec.NodeName = "busy"
	createPod(t, c, filler)

	conf, err := config.Parse([]byte(`
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {leaderElect: false}
profiles:
- schedulerName: default-scheduler
- schedulerName: bin-packer
  plugins:
    score:
      disabled: [{name: NodeResourcesBalancedAllocation}]
  pluginConfig:
  - name: NodeResourcesFit
    args: {scoringStrategy: {type: MostAllocated}}
`))
	if err != nil {
		t.Fatal(err)
	}
	startScheduler(t, c, conf)
	spread := makePod("default", "spread", "1", "1Gi")
	packed := makePod("default", "packed", "1", "1Gi")
	packed.Spec.SchedulerName = "bin-packer"
	createPod(t, c, spread)
	createPod(t, c, packed)
	waitFor(t, "both bound", func() bool {
		return getPod(t, c, "default", "spread").Spec.NodeName != "" && getPod(t, c, "default", "packed").Spec.NodeName != ""
	})
	if n := getPod(t, c, "default", "spread").Spec.NodeName; n != "empty" {
		t.Errorf("default profile (LeastAllocated) chose %s, want empty", n)
	}
	if n := getPod(t, c, "default", "packed").Spec.NodeName; n != "busy" {
		t.Errorf("bin-packer profile (MostAllocated) chose %s, want busy", n)
	}
}

func TestSecondSchedulerAlongside(t *testing.T) {
	c := newFakeCluster()
	createNode(t, c, makeNode("n1", "8", "16Gi", 110, nil))
	startScheduler(t, c, testConfig())
	other := testConfig()
	other.Profiles = []config.KubeSchedulerProfile{{SchedulerName: "my-scheduler"}}
	startSchedulerWithIdentity(t, c, other, "", false)
	mine := makePod("default", "mine", "1", "1Gi")
	mine.Spec.SchedulerName = "my-scheduler"
	createPod(t, c, mine)
	createPod(t, c, makePod("default", "theirs", "1", "1Gi"))
	waitFor(t, "both bound", func() bool {
		return getPod(t, c, "default", "mine").Spec.NodeName != "" && getPod(t, c, "default", "theirs").Spec.NodeName != ""
	})
	waitFor(t, "Scheduled event from my-scheduler", func() bool {
		evs, _ := c.EventsV1().Events("default").List(context.Background(), metav1.ListOptions{})
		for _, e := range evs.Items {
			if e.Reason == "Scheduled" && e.Regarding.Name == "mine" && e.ReportingController == "my-scheduler" {
				return true
			}
		}
		return false
	})
	if c.bindCount("default", "mine") != 1 || c.bindCount("default", "theirs") != 1 {
		t.Error("a pod was bound more than once")
	}
}

func TestMetricsAreExposed(t *testing.T) {
	c := newFakeCluster()
	createNode(t, c, makeNode("n1", "1", "1Gi", 110, nil))
	s := startScheduler(t, c, testConfig())
	createPod(t, c, makePod("default", "fits", "500m", "100Mi"))
	createPod(t, c, makePod("default", "too-big", "2", "100Mi"))
	waitFor(t, "fits bound", func() bool { return getPod(t, c, "default", "fits").Spec.NodeName != "" })
	waitFor(t, "too-big unschedulable", func() bool { return scheduledCondition(getPod(t, c, "default", "too-big")) != nil })
	srv := httptest.NewServer(s.MetricsHandler())
	defer srv.Close()
	var body string
	waitFor(t, "metrics", func() bool {
		resp, err := srv.Client().Get(srv.URL)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		body = string(b)
		return strings.Contains(body, `scheduler_pending_pods{queue="unschedulable"} 1`)
	})
	for _, want := range []string{
		`scheduler_schedule_attempts_total{profile="default-scheduler",result="scheduled"} 1`,
		`scheduler_schedule_attempts_total{profile="default-scheduler",result="unschedulable"}`,
		`scheduler_scheduling_attempt_duration_seconds_count{profile="default-scheduler",result="scheduled"} 1`,
		`scheduler_framework_extension_point_duration_seconds_count{extension_point="PreFilter",profile="default-scheduler",status="Success"}`,
		`scheduler_framework_extension_point_duration_seconds_count{extension_point="Bind",profile="default-scheduler",status="Success"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

func TestLeaderElectionOnlyOneSchedules(t *testing.T) {
	c := newFakeCluster()
	createNode(t, c, makeNode("n1", "8", "16Gi", 110, nil))
	elect := func() *config.KubeSchedulerConfiguration {
		conf := config.Default()
		le := &conf.LeaderElection
		yes := true
		le.LeaderElect = &yes
		le.LeaseDuration.Duration = 2 * time.Second
		le.RenewDeadline.Duration = time.Second
		le.RetryPeriod.Duration = 100 * time.Millisecond
		return conf
	}
	ctxA, cancelA := context.WithCancel(context.Background())
	a, err := New(ctxA, c, Config{Configuration: elect(), Identity: "a", Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	doneA := make(chan error, 1)
	go func() { doneA <- a.Run(ctxA) }()
	waitFor(t, "a to hold the lease", func() bool { return leaseHolder(c) == "a" })

	startSchedulerWithIdentity(t, c, elect(), "b", true)
	createPod(t, c, makePod("default", "p1", "1", "1Gi"))
	waitFor(t, "p1 bound by the leader", func() bool { return getPod(t, c, "default", "p1").Spec.NodeName != "" })
	if leaseHolder(c) != "a" {
		t.Fatalf("lease moved to %q while a was healthy", leaseHolder(c))
	}
	// a stops and releases the lease; b takes over.
	cancelA()
	if err := <-doneA; err != nil {
		t.Fatalf("a.Run: %v", err)
	}
	waitFor(t, "b to take the lease", func() bool { return leaseHolder(c) == "b" })
	createPod(t, c, makePod("default", "p2", "1", "1Gi"))
	waitFor(t, "p2 bound by the new leader", func() bool { return getPod(t, c, "default", "p2").Spec.NodeName != "" })
}

func leaseHolder(c *fakeCluster) string {
	l, err := c.CoordinationV1().Leases("kube-system").Get(context.Background(), "kube-scheduler", metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

func TestNewStartsNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	if _, err := New(context.Background(), newFakeCluster(), Config{Configuration: testConfig()}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "goroutine count back to its start", func() bool { return runtime.NumGoroutine() <= before })
}
