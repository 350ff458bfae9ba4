package kubectl

import (
	"bufio"
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestGetPodsWatch: `kubectl get pods -w` streams a pod's creation, update
// and deletion.
func TestGetPodsWatch(t *testing.T) {
	t.Parallel()
	ns := createNamespace(t, "watch")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, kubectlPath, "get", "pods", "-w", "--output-watch-events", "-n", ns)
	cmd.Env = append(cmd.Environ(), "KUBECONFIG="+server.kubeconfig, "KUBECACHEDIR="+filepath.Join(scratch, "cache"))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 100)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	defer func() {
		_ = cmd.Process.Kill()
		for range lines {
		}
		_ = cmd.Wait()
	}()
	next := func() string {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("kubectl get -w ended")
			}
			return l
		case <-ctx.Done():
			t.Fatal("no line from kubectl get -w")
		}
		return ""
	}
	// Whether kubectl lists before or after the creation, the pod shows up
	// as ADDED (--output-watch-events prints listed items as ADDED), and
	// kubectl watches from its list's resourceVersion, so nothing later is
	// missed.
	pod := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: w\n  namespace: " + ns + "\nspec:\n  containers:\n  - name: c\n    image: nginx\n"
	runIn(t, pod, "create", "-f", "-")
	first := next()
	header := regexp.MustCompile(`\s{2,}`).Split(strings.TrimSpace(first), -1)
	if strings.Join(header, "|") != "EVENT|NAME|READY|STATUS|RESTARTS|AGE" {
		t.Errorf("watch header: %q", first)
	}
	if l := next(); !regexp.MustCompile(`^ADDED\s+w\s+0/1\s+Pending\s+0\s`).MatchString(l) {
		t.Errorf("creation line: %q", l)
	}
	run(t, "label", "pod", "w", "stage=two", "-n", ns)
	if l := next(); !regexp.MustCompile(`^MODIFIED\s+w\s+0/1\s+Pending\s`).MatchString(l) {
		t.Errorf("update line: %q", l)
	}
	run(t, "delete", "pod", "w", "-n", ns)
	// An unscheduled pod is deleted at once: one DELETED line (kubectl may
	// first show the MODIFIED that sets the deletionTimestamp if the server
	// marks it first).
	for {
		l := next()
		if strings.HasPrefix(l, "DELETED") {
			if !regexp.MustCompile(`^DELETED\s+w\s`).MatchString(l) {
				t.Errorf("deletion line: %q", l)
			}
			break
		}
		if !strings.HasPrefix(l, "MODIFIED") {
			t.Fatalf("unexpected line before DELETED: %q", l)
		}
	}
}

// TestAPIResources: every resource issue 2 lists, with its short names,
// group version, scope and kind.
func TestAPIResources(t *testing.T) {
	t.Parallel()
	out := run(t, "api-resources")
	rows := map[string]bool{}
	for _, l := range strings.Split(out, "\n")[1:] {
		rows[strings.Join(strings.Fields(l), " ")] = true
	}
	for _, want := range []string{
		"namespaces ns v1 false Namespace",
		"pods po v1 true Pod",
		"nodes no v1 false Node",
		"events ev v1 true Event",
		"configmaps cm v1 true ConfigMap",
		"secrets v1 true Secret",
		"serviceaccounts sa v1 true ServiceAccount",
		"services svc v1 true Service",
		"endpoints ep v1 true Endpoints",
		"limitranges limits v1 true LimitRange",
		"resourcequotas quota v1 true ResourceQuota",
		"deployments deploy apps/v1 true Deployment",
		"replicasets rs apps/v1 true ReplicaSet",
		"leases coordination.k8s.io/v1 true Lease",
		"endpointslices discovery.k8s.io/v1 true EndpointSlice",
		"roles rbac.authorization.k8s.io/v1 true Role",
		"rolebindings rbac.authorization.k8s.io/v1 true RoleBinding",
		"clusterroles rbac.authorization.k8s.io/v1 false ClusterRole",
		"clusterrolebindings rbac.authorization.k8s.io/v1 false ClusterRoleBinding",
		"priorityclasses pc scheduling.k8s.io/v1 false PriorityClass",
		"runtimeclasses node.k8s.io/v1 false RuntimeClass",
		"events ev events.k8s.io/v1 true Event",
		"flowschemas flowcontrol.apiserver.k8s.io/v1 false FlowSchema",
		"prioritylevelconfigurations flowcontrol.apiserver.k8s.io/v1 false PriorityLevelConfiguration",
	} {
		if !rows[want] {
			t.Errorf("api-resources lacks %q:\n%s", want, out)
		}
	}
	wide := run(t, "api-resources", "-o", "wide", "--api-group=apps")
	if !regexp.MustCompile(`(?m)^deployments\s.*\W(create[ ,]delete[ ,]deletecollection[ ,]get[ ,]list[ ,]patch[ ,]update[ ,]watch)\W*\s+all$`).MatchString(wide) {
		t.Errorf("api-resources -o wide: deployments verbs/categories:\n%s", wide)
	}
}

// TestExplain: kubectl explain reads the served OpenAPI.
func TestExplain(t *testing.T) {
	t.Parallel()
	out := run(t, "explain", "deployment.spec.replicas")
	for _, want := range []string{"GROUP:      apps", "KIND:       Deployment", "VERSION:    v1", "FIELD: replicas <integer>"} {
		if !strings.Contains(out, want) {
			t.Errorf("explain deployment.spec.replicas lacks %q:\n%s", want, out)
		}
	}
	out = run(t, "explain", "pods.spec.containers")
	for _, want := range []string{"KIND:       Pod", "FIELD: containers <[]Container>", "image\t<string>", "name\t<string> -required-",
		"List of containers belonging to the pod.", "Container image name."} {
		if !strings.Contains(out, want) {
			t.Errorf("explain pods.spec.containers lacks %q:\n%s", want, out)
		}
	}
	runFail(t, `field "nosuchfield" does not exist`, "explain", "pods.spec.nosuchfield")
}

// TestNamespaceLifecycle: create namespace; delete namespace marks it
// Terminating with the kubernetes finalizer, and with no namespace
// controller running it stays Terminating (as in Kubernetes without a
// controller manager); new objects are refused in it.
func TestNamespaceLifecycle(t *testing.T) {
	t.Parallel()
	if out := run(t, "create", "namespace", "doomed"); strings.TrimSpace(out) != "namespace/doomed created" {
		t.Errorf("create namespace: %q", out)
	}
	if got := jsonpath(t, "{.status.phase} {.spec.finalizers}", "get", "namespace", "doomed"); got != `Active ["kubernetes"]` {
		t.Errorf("new namespace: %q", got)
	}
	run(t, "create", "configmap", "inside", "--from-literal=a=b", "-n", "doomed")
	if out := run(t, "delete", "namespace", "doomed", "--wait=false"); strings.TrimSpace(out) != `namespace "doomed" deleted` {
		t.Errorf("delete namespace: %q", out)
	}
	for i := 0; i < 3; i++ {
		got := jsonpath(t, "{.status.phase} {.spec.finalizers} {.metadata.deletionTimestamp}", "get", "namespace", "doomed")
		if !regexp.MustCompile(`^Terminating \["kubernetes"\] \d{4}-`).MatchString(got) {
			t.Errorf("deleted namespace: %q, want Terminating with the kubernetes finalizer and a deletionTimestamp", got)
		}
		time.Sleep(500 * time.Millisecond)
	}
	table := run(t, "get", "namespace", "doomed")
	if !regexp.MustCompile(`(?m)^doomed\s+Terminating\s`).MatchString(table) {
		t.Errorf("get namespace:\n%s", table)
	}
	runFail(t, `because it is being terminated`, "create", "configmap", "late", "--from-literal=a=b", "-n", "doomed")
	// The object that was inside is still there: nothing deletes it.
	run(t, "get", "configmap", "inside", "-n", "doomed")
}

// TestErrors: the errors kubectl users see.
func TestErrors(t *testing.T) {
	t.Parallel()
	ns := createNamespace(t, "errors")
	runFail(t, `Error from server (NotFound): pods "x" not found`, "get", "pod", "x", "-n", ns)
	runFail(t, `Error from server (NotFound): namespaces "nowhere" not found`, "get", "namespace", "nowhere")

	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: twice\n  namespace: " + ns + "\n"
	runIn(t, cm, "create", "-f", "-")
	runFailIn(t, cm, `Error from server (AlreadyExists): error when creating "STDIN": configmaps "twice" already exists`, "create", "-f", "-")

	bad := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: Bad_Name\n  namespace: " + ns + "\n"
	runFailIn(t, bad, `The ConfigMap "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain`, "create", "-f", "-")

	badDeploy := strings.Replace(deployment(ns, "-2", "nginx"), "app: web\n  template", "app: other\n  template", 1)
	stderr := runFailIn(t, badDeploy, `The Deployment "web" is invalid:`, "create", "-f", "-")
	for _, want := range []string{
		"spec.replicas: Invalid value: -2: must be greater than or equal to 0",
		"spec.template.metadata.labels: Invalid value: {\"app\":\"web\"}: `selector` does not match template `labels`",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("invalid deployment: stderr lacks %q:\n%s", want, stderr)
		}
	}
	badPod := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  namespace: " + ns + "\nspec:\n  containers:\n  - name: c\n"
	runFailIn(t, badPod, `spec.containers[0].image: Required value`, "create", "-f", "-")

	// events.k8s.io/v1 events are immutable but for their series.
	ev := "apiVersion: events.k8s.io/v1\nkind: Event\nmetadata:\n  name: ev\n  namespace: " + ns + "\neventTime: \"2026-01-02T03:04:05.000000Z\"\nregarding:\n  kind: Pod\n  name: p\n  namespace: " + ns + "\nreason: Testing\nnote: first\ntype: Normal\naction: Test\nreportingController: example.com/e2e\nreportingInstance: e2e-1\n"
	runIn(t, ev, "create", "-f", "-")
	runFail(t, `Invalid value: "second": field is immutable`, "patch", "events.events.k8s.io/ev", "-n", ns, "--type=merge", "-p", `{"note":"second"}`)

	// dry-run=server runs validation but stores nothing.
	out := run(t, "create", "configmap", "dry", "--from-literal=a=b", "--dry-run=server", "-n", ns)
	if strings.TrimSpace(out) != "configmap/dry created (server dry run)" {
		t.Errorf("dry run: %q", out)
	}
	runFail(t, `configmaps "dry" not found`, "get", "configmap", "dry", "-n", ns)
	runFailIn(t, bad, "is invalid", "create", "-f", "-", "--dry-run=server")

	// A stale update is a Conflict.
	cur := run(t, "get", "configmap", "twice", "-n", ns, "-o", "yaml")
	run(t, "label", "configmap", "twice", "moved=yes", "-n", ns)
	runFailIn(t, cur, `Operation cannot be fulfilled on configmaps "twice": the object has been modified; please apply your changes to the latest version and try again`, "replace", "-f", "-")
}

// TestRestart: objects survive stopping `kubeproof up` and starting it
// again on the same data dir.
func TestRestart(t *testing.T) {
	t.Parallel()
	dataDir := filepath.Join(t.TempDir(), "data")
	p, err := startUp(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	runWith(t, p, "", nil, "create", "namespace", "keep")
	runWith(t, p, deployment("keep", "2", "nginx:1.25"), nil, "apply", "-f", "-")
	runWith(t, p, "", nil, "create", "secret", "generic", "s", "--from-literal=k=v", "-n", "keep")
	before := runWith(t, p, "", nil, "get", "deployment", "web", "-n", "keep", "-o", "jsonpath={.metadata.uid} {.metadata.resourceVersion} {.spec.replicas}")
	if err := p.stop(); err != nil {
		t.Fatal(err)
	}

	p, err = startUp(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := p.stop(); err != nil {
			t.Error(err)
		}
	}()
	after := runWith(t, p, "", nil, "get", "deployment", "web", "-n", "keep", "-o", "jsonpath={.metadata.uid} {.metadata.resourceVersion} {.spec.replicas}")
	if after != before {
		t.Errorf("deployment after restart: %q, before: %q", after, before)
	}
	if got := runWith(t, p, "", nil, "get", "secret", "s", "-n", "keep", "-o", "jsonpath={.data.k}"); got != "dg==" {
		t.Errorf("secret after restart: %q", got)
	}
	if out := runWith(t, p, deployment("keep", "2", "nginx:1.25"), nil, "apply", "-f", "-"); strings.TrimSpace(out) != "deployment.apps/web unchanged" {
		t.Errorf("apply after restart: %q", out)
	}
	// Writes still work and get newer resourceVersions.
	runWith(t, p, "", nil, "scale", "deployment/web", "-n", "keep", "--replicas=3")
}
