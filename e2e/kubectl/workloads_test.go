package kubectl

import (
	"encoding/base64"
	"strings"
	"testing"
)

const webDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: NS
  labels:
    app: web
spec:
  replicas: REPLICAS
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: nginx
        image: IMAGE
`

func deployment(ns, replicas, image string) string {
	return strings.NewReplacer("NS", ns, "REPLICAS", replicas, "IMAGE", image).Replace(webDeployment)
}

// TestApplyDeploymentIdempotent: the same Deployment applied twice is
// "unchanged" with the same resourceVersion; a changed one is "configured".
func TestApplyDeploymentIdempotent(t *testing.T) {
	t.Parallel()
	ns := createNamespace(t, "apply")
	if out := runIn(t, deployment(ns, "2", "nginx:1.25"), "apply", "-f", "-"); strings.TrimSpace(out) != "deployment.apps/web created" {
		t.Fatalf("first apply: %q", out)
	}
	rv := jsonpath(t, "{.metadata.resourceVersion}", "get", "deployment", "web", "-n", ns)
	gen := jsonpath(t, "{.metadata.generation}", "get", "deployment", "web", "-n", ns)
	if gen != "1" {
		t.Errorf("generation after create = %s, want 1", gen)
	}
	if out := runIn(t, deployment(ns, "2", "nginx:1.25"), "apply", "-f", "-"); strings.TrimSpace(out) != "deployment.apps/web unchanged" {
		t.Errorf("second apply: %q", out)
	}
	if got := jsonpath(t, "{.metadata.resourceVersion}", "get", "deployment", "web", "-n", ns); got != rv {
		t.Errorf("unchanged apply moved resourceVersion %s -> %s", rv, got)
	}
	if out := runIn(t, deployment(ns, "4", "nginx:1.26"), "apply", "-f", "-"); strings.TrimSpace(out) != "deployment.apps/web configured" {
		t.Errorf("changed apply: %q", out)
	}
	got := jsonpath(t, "{.spec.replicas} {.spec.template.spec.containers[0].image} {.metadata.generation}", "get", "deployment", "web", "-n", ns)
	if got != "4 nginx:1.26 2" {
		t.Errorf("after changed apply: replicas image generation = %q, want \"4 nginx:1.26 2\"", got)
	}
	if last := jsonpath(t, `{.metadata.annotations.kubectl\.kubernetes\.io/last-applied-configuration}`, "get", "deployment", "web", "-n", ns); !strings.Contains(last, "nginx:1.26") {
		t.Errorf("last-applied-configuration not updated: %q", last)
	}
}

// TestScale scales deployments and replicasets through their scale
// subresource.
func TestScale(t *testing.T) {
	t.Parallel()
	ns := createNamespace(t, "scale")
	runIn(t, deployment(ns, "1", "nginx"), "create", "-f", "-")
	rs := strings.NewReplacer("kind: Deployment", "kind: ReplicaSet", "name: web", "name: web-rs").Replace(deployment(ns, "1", "nginx"))
	runIn(t, rs, "create", "-f", "-")
	for _, ref := range []string{"deployment/web", "replicaset/web-rs"} {
		if out := run(t, "scale", ref, "-n", ns, "--replicas=5"); !strings.Contains(out, " scaled") {
			t.Errorf("scale %s: %q", ref, out)
		}
		if got := jsonpath(t, "{.spec.replicas}", "get", ref, "-n", ns); got != "5" {
			t.Errorf("%s replicas after scale = %s", ref, got)
		}
		// --current-replicas is a precondition checked against the scale.
		runFail(t, "Expected replicas to be 4, was 5", "scale", ref, "-n", ns, "--current-replicas=4", "--replicas=7")
		run(t, "scale", ref, "-n", ns, "--current-replicas=5", "--replicas=0")
		if got := jsonpath(t, "{.spec.replicas}", "get", ref, "-n", ns); got != "0" {
			t.Errorf("%s replicas after scale to 0 = %s", ref, got)
		}
	}
	// kubectl refuses --replicas=-1 itself; the server refuses it in a patch
	// of the scale subresource.
	runFail(t, `The Scale "web" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0`,
		"patch", "deployment/web", "-n", ns, "--subresource=scale", "--type=merge", "-p", `{"spec":{"replicas":-1}}`)
}

// TestImperativeWorkloads: create deployment, set image, rollout history,
// and get all.
func TestImperativeWorkloads(t *testing.T) {
	t.Parallel()
	ns := createNamespace(t, "imperative")
	if out := run(t, "create", "deployment", "web", "--image=nginx", "--replicas=3", "-n", ns); strings.TrimSpace(out) != "deployment.apps/web created" {
		t.Errorf("create deployment: %q", out)
	}
	if got := jsonpath(t, "{.spec.replicas} {.spec.template.spec.containers[0].name}={.spec.template.spec.containers[0].image} {.spec.selector.matchLabels.app}", "get", "deployment", "web", "-n", ns); got != "3 nginx=nginx web" {
		t.Errorf("created deployment: %q", got)
	}
	// Defaults the API server applies, as upstream.
	if got := jsonpath(t, "{.spec.strategy.type} {.spec.revisionHistoryLimit} {.spec.progressDeadlineSeconds} {.spec.template.spec.restartPolicy}", "get", "deployment", "web", "-n", ns); got != "RollingUpdate 10 600 Always" {
		t.Errorf("deployment defaults: %q", got)
	}
	if out := run(t, "set", "image", "deployment/web", "nginx=nginx:1.27", "-n", ns); !strings.Contains(out, "image updated") {
		t.Errorf("set image: %q", out)
	}
	if got := jsonpath(t, "{.spec.template.spec.containers[0].image} {.metadata.generation}", "get", "deployment", "web", "-n", ns); got != "nginx:1.27 2" {
		t.Errorf("after set image: image generation = %q", got)
	}

	// rollout history reads the ReplicaSets the Deployment controls. With no
	// controller running, create one the way the controller would.
	uid := jsonpath(t, "{.metadata.uid}", "get", "deployment", "web", "-n", ns)
	rs := `apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: web-5d8f
  namespace: NS
  labels: {app: web}
  annotations:
    deployment.kubernetes.io/revision: "1"
    kubernetes.io/change-cause: first rollout
  ownerReferences:
  - apiVersion: apps/v1
    kind: Deployment
    name: web
    uid: UID
    controller: true
    blockOwnerDeletion: true
spec:
  replicas: 3
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: nginx
        image: nginx
`
	runIn(t, strings.NewReplacer("NS", ns, "UID", uid).Replace(rs), "create", "-f", "-")
	hist := run(t, "rollout", "history", "deployment/web", "-n", ns)
	if !strings.Contains(hist, "REVISION") || !strings.Contains(hist, "first rollout") {
		t.Errorf("rollout history:\n%s", hist)
	}

	all := run(t, "get", "all", "-n", ns)
	for _, want := range []string{"deployment.apps/web", "replicaset.apps/web-5d8f"} {
		if !strings.Contains(all, want) {
			t.Errorf("get all lacks %s:\n%s", want, all)
		}
	}
}

// TestCreateConfigMapAndSecret: the imperative create commands.
func TestCreateConfigMapAndSecret(t *testing.T) {
	t.Parallel()
	ns := createNamespace(t, "imperative-data")
	if out := run(t, "create", "configmap", "settings", "--from-literal=mode=fast", "--from-literal=size=3", "-n", ns); strings.TrimSpace(out) != "configmap/settings created" {
		t.Errorf("create configmap: %q", out)
	}
	if got := jsonpath(t, "{.data.mode} {.data.size}", "get", "configmap", "settings", "-n", ns); got != "fast 3" {
		t.Errorf("configmap data: %q", got)
	}
	if out := run(t, "create", "secret", "generic", "token", "--from-literal=password=s3cr3t", "-n", ns); strings.TrimSpace(out) != "secret/token created" {
		t.Errorf("create secret: %q", out)
	}
	got := jsonpath(t, "{.type} {.data.password}", "get", "secret", "token", "-n", ns)
	if want := "Opaque " + base64.StdEncoding.EncodeToString([]byte("s3cr3t")); got != want {
		t.Errorf("secret: got %q, want %q", got, want)
	}
	runFail(t, `configmaps "settings" already exists`, "create", "configmap", "settings", "--from-literal=a=b", "-n", ns)
}

// TestDeleteCascade: --cascade=foreground and orphan record the
// foregroundDeletion and orphan finalizers; with no garbage collector the
// object stays, marked with a deletionTimestamp.
func TestDeleteCascade(t *testing.T) {
	t.Parallel()
	ns := createNamespace(t, "cascade")
	for _, c := range []struct{ cascade, finalizer string }{
		{"foreground", "foregroundDeletion"},
		{"orphan", "orphan"},
	} {
		name := "web-" + c.cascade
		runIn(t, strings.Replace(deployment(ns, "1", "nginx"), "name: web\n", "name: "+name+"\n", 1), "create", "-f", "-")
		out := run(t, "delete", "deployment", name, "-n", ns, "--cascade="+c.cascade, "--wait=false")
		if !strings.Contains(out, `"`+name+`" deleted`) {
			t.Errorf("delete --cascade=%s: %q", c.cascade, out)
		}
		got := jsonpath(t, "{.metadata.finalizers}", "get", "deployment", name, "-n", ns)
		if got != `["`+c.finalizer+`"]` {
			t.Errorf("--cascade=%s: finalizers %s, want [%q]", c.cascade, got, c.finalizer)
		}
		if ts := jsonpath(t, "{.metadata.deletionTimestamp}", "get", "deployment", name, "-n", ns); ts == "" {
			t.Errorf("--cascade=%s: no deletionTimestamp", c.cascade)
		}
		// Removing the finalizer lets the object go.
		run(t, "patch", "deployment", name, "-n", ns, "--type=json", "-p", `[{"op":"remove","path":"/metadata/finalizers"}]`)
		runFail(t, `deployments.apps "`+name+`" not found`, "get", "deployment", name, "-n", ns)
	}
	// Background (the default) deletes at once.
	runIn(t, deployment(ns, "1", "nginx"), "create", "-f", "-")
	run(t, "delete", "deployment", "web", "-n", ns, "--cascade=background")
	runFail(t, `deployments.apps "web" not found`, "get", "deployment", "web", "-n", ns)
}
