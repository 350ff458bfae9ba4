package cri

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeproof/kubeproof/e2e/cri/images"
	kruntime "github.com/kubeproof/kubeproof/impl/kubelet/runtime"
)

// busybox is the image every test pod runs.
const busybox = images.BusyboxRef

// newNamespace creates a namespace for one test and deletes it afterwards.
func newNamespace(t *testing.T) string {
	t.Helper()
	name := "e2e-" + strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(name) > 60 {
		name = name[:60]
	}
	name = strings.TrimRight(name, "-")
	ctx := context.Background()
	if _, err := env.Client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = env.Client.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	return name
}

// ctxFor is a context that ends with the test or after d.
func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// kubectlFirstLines starts a streaming kubectl command (logs -f, attach)
// against the suite's cluster, reads the first n lines of its output (up
// to 30 s), then stops it. It returns the lines read and the error that
// ended reading early, if any.
func kubectlFirstLines(t *testing.T, n int, args ...string) ([]string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, env.Kubectl, append([]string{"--kubeconfig", env.Kubeconfig}, args...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	var lines []string
	for len(lines) < n && sc.Scan() {
		lines = append(lines, sc.Text())
	}
	cancel()
	_ = cmd.Wait()
	return lines, sc.Err()
}

// kubectl runs kubectl against the suite's cluster and returns its stdout.
func kubectl(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, env.Kubectl, append([]string{"--kubeconfig", env.Kubeconfig}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// mustKubectl is kubectl that fails the test on error.
func mustKubectl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := kubectl(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// createPod creates pod in ns with client-go.
func createPod(t *testing.T, ns string, pod *v1.Pod) *v1.Pod {
	t.Helper()
	got, err := env.Client.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating pod %s: %v", pod.Name, err)
	}
	return got
}

// podSpec is a one-container busybox pod running sh -c script.
func podSpec(name, script string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"test": name}},
		Spec: v1.PodSpec{
			Containers: []v1.Container{{Name: "main", Image: busybox, Command: []string{"sh", "-c", script}}},
		},
	}
}

// waitPod polls the pod until cond holds, failing after timeout with the
// last status seen.
func waitPod(t *testing.T, ns, name string, timeout time.Duration, what string, cond func(*v1.Pod) bool) *v1.Pod {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last *v1.Pod
	for {
		p, err := env.Client.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err == nil {
			last = p
			if cond(p) {
				return p
			}
		}
		if time.Now().After(deadline) {
			if last != nil {
				t.Fatalf("pod %s/%s: not %s within %s; status: phase=%s conditions=%s containers=%s init=%s",
					ns, name, what, timeout, last.Status.Phase, conditions(last), containerStates(last.Status.ContainerStatuses), containerStates(last.Status.InitContainerStatuses))
			}
			t.Fatalf("pod %s/%s: not %s within %s: %v", ns, name, what, timeout, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func conditions(p *v1.Pod) string {
	var s []string
	for _, c := range p.Status.Conditions {
		s = append(s, fmt.Sprintf("%s=%s", c.Type, c.Status))
	}
	return strings.Join(s, ",")
}

func containerStates(cs []v1.ContainerStatus) string {
	var s []string
	for _, c := range cs {
		st := "?"
		switch {
		case c.State.Running != nil:
			st = "running"
		case c.State.Waiting != nil:
			st = "waiting(" + c.State.Waiting.Reason + ": " + c.State.Waiting.Message + ")"
		case c.State.Terminated != nil:
			st = fmt.Sprintf("terminated(%s, exit %d)", c.State.Terminated.Reason, c.State.Terminated.ExitCode)
		}
		s = append(s, fmt.Sprintf("%s:%s ready=%v restarts=%d", c.Name, st, c.Ready, c.RestartCount))
	}
	return "[" + strings.Join(s, "; ") + "]"
}

func isRunningReady(p *v1.Pod) bool {
	if p.Status.Phase != v1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

func isRunning(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning }

func phaseIs(phase v1.PodPhase) func(*v1.Pod) bool {
	return func(p *v1.Pod) bool { return p.Status.Phase == phase }
}

// containerStatus returns the status of container name, or nil.
func containerStatus(p *v1.Pod, name string) *v1.ContainerStatus {
	for i := range p.Status.ContainerStatuses {
		if p.Status.ContainerStatuses[i].Name == name {
			return &p.Status.ContainerStatuses[i]
		}
	}
	for i := range p.Status.InitContainerStatuses {
		if p.Status.InitContainerStatuses[i].Name == name {
			return &p.Status.InitContainerStatuses[i]
		}
	}
	return nil
}

// inCIDR reports whether ip is inside cidr.
func inCIDR(ip, cidr string) bool {
	_, n, err := net.ParseCIDR(cidr)
	return err == nil && n.Contains(net.ParseIP(ip))
}

// httpdDeployment is a Deployment of busybox httpd serving /www on port 80
// with an httpGet readiness probe.
func httpdDeployment(name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: v1.PodSpec{
					TerminationGracePeriodSeconds: ptr(int64(2)),
					Containers: []v1.Container{{
						Name: "httpd", Image: busybox,
						Command: []string{"httpd", "-f", "-p", "80", "-h", "/www"},
						Ports:   []v1.ContainerPort{{ContainerPort: 80}},
						ReadinessProbe: &v1.Probe{
							ProbeHandler:  v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/index.html", Port: intstr.FromInt32(80)}},
							PeriodSeconds: 1,
						},
					}},
				},
			},
		},
	}
}

func ptr[T any](v T) *T { return &v }

// sandboxesOf lists the node's sandboxes of the pods of namespace ns.
func sandboxesOf(t *testing.T, ns string) []*runtimeapi.PodSandbox {
	t.Helper()
	sbs, err := node.CRI.ListPodSandbox(context.Background(), &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{kruntime.LabelPodNamespace: ns}})
	if err != nil {
		t.Fatal(err)
	}
	return sbs
}

// containersOf lists the node's containers of the pods of namespace ns.
func containersOf(t *testing.T, ns string) []*runtimeapi.Container {
	t.Helper()
	cs, err := node.CRI.ListContainers(context.Background(), &runtimeapi.ContainerFilter{LabelSelector: map[string]string{kruntime.LabelPodNamespace: ns}})
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// waitGone polls until the pods of ns are gone from the API.
func waitNoPods(t *testing.T, ns string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		l, err := env.Client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
		if err == nil && len(l.Items) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pods of %s not gone within %s: %d left (%v)", ns, timeout, len(l.Items), err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func isNotFound(err error) bool { return apierrors.IsNotFound(err) }

var getOpts = metav1.GetOptions{}
