package kubectl

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// kind is one resource issue 2 lists, with a manifest and what kubectl
// shows of it the way upstream's printers do.
type kind struct {
	// resource is what kubectl is given (plural, with the group when the
	// plural alone is ambiguous).
	resource string
	// nameOutput is `-o name`'s prefix (kind.group).
	nameOutput string
	kind       string
	apiVersion string
	namespaced bool
	// manifest is YAML with NAME and NS placeholders.
	manifest string
	// headers and wideHeaders are the table columns of `get` and `get -o wide`.
	headers, wideHeaders []string
	// field is a JSON pointer (map keys only) to a mutable field, and values
	// are four JSON values it takes in turn: by strategic merge patch, merge
	// patch, JSON patch and kubectl edit.
	field  string
	values [4]string
	// initial is the field's value in the manifest (JSON), which edit's
	// sed expression starts from in the YAML kubectl shows.
}

var kinds = []kind{
	{
		resource: "namespaces", nameOutput: "namespace", kind: "Namespace", apiVersion: "v1",
		manifest: "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: NAME\n  labels:\n    tier: a\n",
		headers:  []string{"NAME", "STATUS", "AGE"}, wideHeaders: []string{"NAME", "STATUS", "AGE"},
		field: "/metadata/labels/tier", values: [4]string{`"smp"`, `"merge"`, `"json"`, `"edited"`},
	},
	{
		resource: "pods", nameOutput: "pod", kind: "Pod", apiVersion: "v1", namespaced: true,
		manifest:    "apiVersion: v1\nkind: Pod\nmetadata:\n  name: NAME\n  namespace: NS\nspec:\n  activeDeadlineSeconds: 300\n  containers:\n  - name: c\n    image: nginx\n",
		headers:     []string{"NAME", "READY", "STATUS", "RESTARTS", "AGE"},
		wideHeaders: []string{"NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE", "NOMINATED NODE", "READINESS GATES"},
		field:       "/spec/activeDeadlineSeconds", values: [4]string{"200", "100", "50", "25"},
	},
	{
		resource: "nodes", nameOutput: "node", kind: "Node", apiVersion: "v1",
		manifest:    "apiVersion: v1\nkind: Node\nmetadata:\n  name: NAME\n  labels:\n    tier: a\n",
		headers:     []string{"NAME", "STATUS", "ROLES", "AGE", "VERSION"},
		wideHeaders: []string{"NAME", "STATUS", "ROLES", "AGE", "VERSION", "INTERNAL-IP", "EXTERNAL-IP", "OS-IMAGE", "KERNEL-VERSION", "CONTAINER-RUNTIME"},
		field:       "/metadata/labels/tier", values: [4]string{`"smp"`, `"merge"`, `"json"`, `"edited"`},
	},
	{
		resource: "events", nameOutput: "event", kind: "Event", apiVersion: "v1", namespaced: true,
		manifest:    "apiVersion: v1\nkind: Event\nmetadata:\n  name: NAME\n  namespace: NS\ninvolvedObject:\n  kind: Pod\n  name: p\n  namespace: NS\nreason: Testing\nmessage: first\ntype: Normal\nsource:\n  component: e2e\n",
		headers:     []string{"LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"},
		wideHeaders: []string{"LAST SEEN", "TYPE", "REASON", "OBJECT", "SUBOBJECT", "SOURCE", "MESSAGE", "FIRST SEEN", "COUNT", "NAME"},
		field:       "/message", values: [4]string{`"smp"`, `"merge"`, `"json"`, `"edited"`},
	},
	{
		resource: "configmaps", nameOutput: "configmap", kind: "ConfigMap", apiVersion: "v1", namespaced: true,
		manifest: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: NAME\n  namespace: NS\ndata:\n  k: first\n",
		headers:  []string{"NAME", "DATA", "AGE"}, wideHeaders: []string{"NAME", "DATA", "AGE"},
		field: "/data/k", values: [4]string{`"smp"`, `"merge"`, `"json"`, `"edited"`},
	},
	{
		resource: "secrets", nameOutput: "secret", kind: "Secret", apiVersion: "v1", namespaced: true,
		manifest: "apiVersion: v1\nkind: Secret\nmetadata:\n  name: NAME\n  namespace: NS\ntype: Opaque\ndata:\n  k: Zmlyc3Q=\n",
		headers:  []string{"NAME", "TYPE", "DATA", "AGE"}, wideHeaders: []string{"NAME", "TYPE", "DATA", "AGE"},
		field: "/data/k", values: [4]string{`"c21w"`, `"bWVyZ2U="`, `"anNvbg=="`, `"ZWRpdGVk"`},
	},
	{
		resource: "serviceaccounts", nameOutput: "serviceaccount", kind: "ServiceAccount", apiVersion: "v1", namespaced: true,
		manifest: "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: NAME\n  namespace: NS\nautomountServiceAccountToken: false\n",
		headers:  []string{"NAME", "SECRETS", "AGE"}, wideHeaders: []string{"NAME", "SECRETS", "AGE"},
		field: "/automountServiceAccountToken", values: [4]string{"true", "false", "true", "false"},
	},
	{
		resource: "limitranges", nameOutput: "limitrange", kind: "LimitRange", apiVersion: "v1", namespaced: true,
		manifest: "apiVersion: v1\nkind: LimitRange\nmetadata:\n  name: NAME\n  namespace: NS\n  labels:\n    tier: a\nspec:\n  limits:\n  - type: Container\n    max:\n      cpu: \"2\"\n    default:\n      cpu: \"2\"\n    defaultRequest:\n      cpu: \"2\"\n",
		headers:  []string{"NAME", "CREATED AT"}, wideHeaders: []string{"NAME", "CREATED AT"},
		field: "/metadata/labels/tier", values: [4]string{`"smp"`, `"merge"`, `"json"`, `"edited"`},
	},
	{
		resource: "resourcequotas", nameOutput: "resourcequota", kind: "ResourceQuota", apiVersion: "v1", namespaced: true,
		manifest: "apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: NAME\n  namespace: NS\nspec:\n  hard:\n    pods: \"10\"\n",
		headers:  []string{"NAME", "REQUEST", "LIMIT", "AGE"}, wideHeaders: []string{"NAME", "REQUEST", "LIMIT", "AGE"},
		field: "/spec/hard/pods", values: [4]string{`"9"`, `"8"`, `"7"`, `"6"`},
	},
	{
		resource: "deployments", nameOutput: "deployment.apps", kind: "Deployment", apiVersion: "apps/v1", namespaced: true,
		manifest:    "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: NAME\n  namespace: NS\nspec:\n  replicas: 2\n  minReadySeconds: 1\n  selector:\n    matchLabels:\n      app: NAME\n  template:\n    metadata:\n      labels:\n        app: NAME\n    spec:\n      containers:\n      - name: c\n        image: nginx\n",
		headers:     []string{"NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"},
		wideHeaders: []string{"NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE", "CONTAINERS", "IMAGES", "SELECTOR"},
		field:       "/spec/minReadySeconds", values: [4]string{"2", "3", "4", "5"},
	},
	{
		resource: "replicasets", nameOutput: "replicaset.apps", kind: "ReplicaSet", apiVersion: "apps/v1", namespaced: true,
		manifest:    "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata:\n  name: NAME\n  namespace: NS\nspec:\n  replicas: 2\n  minReadySeconds: 1\n  selector:\n    matchLabels:\n      app: NAME\n  template:\n    metadata:\n      labels:\n        app: NAME\n    spec:\n      containers:\n      - name: c\n        image: nginx\n",
		headers:     []string{"NAME", "DESIRED", "CURRENT", "READY", "AGE"},
		wideHeaders: []string{"NAME", "DESIRED", "CURRENT", "READY", "AGE", "CONTAINERS", "IMAGES", "SELECTOR"},
		field:       "/spec/minReadySeconds", values: [4]string{"2", "3", "4", "5"},
	},
	{
		resource: "leases", nameOutput: "lease.coordination.k8s.io", kind: "Lease", apiVersion: "coordination.k8s.io/v1", namespaced: true,
		manifest: "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: NAME\n  namespace: NS\nspec:\n  holderIdentity: first\n  leaseDurationSeconds: 15\n",
		headers:  []string{"NAME", "HOLDER", "AGE"}, wideHeaders: []string{"NAME", "HOLDER", "AGE"},
		field: "/spec/holderIdentity", values: [4]string{`"smp"`, `"merge"`, `"json"`, `"edited"`},
	},
	{
		// endpoints and ports are atomic lists: a field the server
		// defaults or always writes (protocol; conditions, never omitted
		// when empty) left out of the manifest would differ from the live
		// object on every apply, as with any API server, so both are
		// spelled out.
		resource: "endpointslices", nameOutput: "endpointslice.discovery.k8s.io", kind: "EndpointSlice", apiVersion: "discovery.k8s.io/v1", namespaced: true,
		manifest: "apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: NAME\n  namespace: NS\n  labels:\n    tier: a\naddressType: IPv4\nendpoints:\n- addresses: [\"10.1.0.1\"]\n  conditions:\n    ready: true\nports:\n- name: http\n  port: 80\n  protocol: TCP\n",
		headers:  []string{"NAME", "ADDRESSTYPE", "PORTS", "ENDPOINTS", "AGE"}, wideHeaders: []string{"NAME", "ADDRESSTYPE", "PORTS", "ENDPOINTS", "AGE"},
		field: "/metadata/labels/tier", values: [4]string{`"smp"`, `"merge"`, `"json"`, `"edited"`},
	},
	{
		resource: "roles", nameOutput: "role.rbac.authorization.k8s.io", kind: "Role", apiVersion: "rbac.authorization.k8s.io/v1", namespaced: true,
		manifest: "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: NAME\n  namespace: NS\n  labels:\n    tier: a\nrules:\n- apiGroups: [\"\"]\n  resources: [\"pods\"]\n  verbs: [\"get\", \"list\"]\n",
		headers:  []string{"NAME", "CREATED AT"}, wideHeaders: []string{"NAME", "CREATED AT"},
		field: "/metadata/labels/tier", values: [4]string{`"smp"`, `"merge"`, `"json"`, `"edited"`},
	},
	{
		resource: "rolebindings", nameOutput: "rolebinding.rbac.authorization.k8s.io", kind: "RoleBinding", apiVersion: "rbac.authorization.k8s.io/v1", namespaced: true,
		manifest: "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: NAME\n  namespace: NS\n  labels:\n    tier: a\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: Role\n  name: reader\nsubjects:\n- kind: User\n  apiGroup: rbac.authorization.k8s.io\n  name: alice\n",
		headers:  []string{"NAME", "ROLE", "AGE"}, wideHeaders: []string{"NAME", "ROLE", "AGE", "USERS", "GROUPS", "SERVICEACCOUNTS"},
		field: "/metadata/labels/tier", values: [4]string{`"smp"`, `"merge"`, `"json"`, `"edited"`},
	},
	{
		resource: "clusterroles", nameOutput: "clusterrole.rbac.authorization.k8s.io", kind: "ClusterRole", apiVersion: "rbac.authorization.k8s.io/v1",
		manifest: "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: NAME\n  labels:\n    tier: a\nrules:\n- apiGroups: [\"\"]\n  resources: [\"nodes\"]\n  verbs: [\"get\"]\n",
		headers:  []string{"NAME", "CREATED AT"}, wideHeaders: []string{"NAME", "CREATED AT"},
		field: "/metadata/labels/tier", values: [4]string{`"smp"`, `"merge"`, `"json"`, `"edited"`},
	},
	{
		resource: "clusterrolebindings", nameOutput: "clusterrolebinding.rbac.authorization.k8s.io", kind: "ClusterRoleBinding", apiVersion: "rbac.authorization.k8s.io/v1",
		manifest: "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: NAME\n  labels:\n    tier: a\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: viewer\nsubjects:\n- kind: Group\n  apiGroup: rbac.authorization.k8s.io\n  name: devs\n",
		headers:  []string{"NAME", "ROLE", "AGE"}, wideHeaders: []string{"NAME", "ROLE", "AGE", "USERS", "GROUPS", "SERVICEACCOUNTS"},
		field: "/metadata/labels/tier", values: [4]string{`"smp"`, `"merge"`, `"json"`, `"edited"`},
	},
	{
		resource: "priorityclasses", nameOutput: "priorityclass.scheduling.k8s.io", kind: "PriorityClass", apiVersion: "scheduling.k8s.io/v1",
		manifest:    "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: NAME\nvalue: 1000\ndescription: first\n",
		headers:     []string{"NAME", "VALUE", "GLOBAL-DEFAULT", "AGE", "PREEMPTIONPOLICY"},
		wideHeaders: []string{"NAME", "VALUE", "GLOBAL-DEFAULT", "AGE", "PREEMPTIONPOLICY"},
		field:       "/description", values: [4]string{`"smp"`, `"merge"`, `"json"`, `"edited"`},
	},
	{
		resource: "runtimeclasses", nameOutput: "runtimeclass.node.k8s.io", kind: "RuntimeClass", apiVersion: "node.k8s.io/v1",
		manifest:    "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata:\n  name: NAME\n  labels:\n    tier: a\nhandler: runsc\noverhead:\n  podFixed:\n    cpu: 250m\n",
		headers:     []string{"NAME", "HANDLER", "AGE"},
		wideHeaders: []string{"NAME", "HANDLER", "AGE"},
		// handler is immutable.
		field: "/metadata/labels/tier", values: [4]string{`"smp"`, `"merge"`, `"json"`, `"edited"`},
	},
	{
		resource: "prioritylevelconfigurations", nameOutput: "prioritylevelconfiguration.flowcontrol.apiserver.k8s.io", kind: "PriorityLevelConfiguration", apiVersion: "flowcontrol.apiserver.k8s.io/v1",
		manifest:    "apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: PriorityLevelConfiguration\nmetadata:\n  name: NAME\n  labels:\n    tier: a\nspec:\n  type: Limited\n  limited:\n    nominalConcurrencyShares: 1\n    limitResponse:\n      type: Reject\n",
		headers:     []string{"NAME", "TYPE", "NOMINALCONCURRENCYSHARES", "QUEUES", "HANDSIZE", "QUEUELENGTHLIMIT", "AGE"},
		wideHeaders: []string{"NAME", "TYPE", "NOMINALCONCURRENCYSHARES", "QUEUES", "HANDSIZE", "QUEUELENGTHLIMIT", "AGE"},
		field:       "/metadata/labels/tier", values: [4]string{`"smp"`, `"merge"`, `"json"`, `"edited"`},
	},
	{
		resource: "events.events.k8s.io", nameOutput: "event.events.k8s.io", kind: "Event", apiVersion: "events.k8s.io/v1", namespaced: true,
		manifest:    "apiVersion: events.k8s.io/v1\nkind: Event\nmetadata:\n  name: NAME\n  namespace: NS\n  labels:\n    tier: a\neventTime: \"2026-01-02T03:04:05.000000Z\"\nregarding:\n  kind: Pod\n  name: p\n  namespace: NS\nreason: Testing\nnote: first\ntype: Normal\naction: Test\nreportingController: example.com/e2e\nreportingInstance: e2e-1\n",
		headers:     []string{"LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"},
		wideHeaders: []string{"LAST SEEN", "TYPE", "REASON", "OBJECT", "SUBOBJECT", "SOURCE", "MESSAGE", "FIRST SEEN", "COUNT", "NAME"},
		// note is immutable in events.k8s.io/v1 (TestErrors).
		field: "/metadata/labels/tier", values: [4]string{`"smp"`, `"merge"`, `"json"`, `"edited"`},
	},
}

// TestEveryKind runs create, apply, get in every output, describe, patch
// (strategic merge, merge, JSON), edit, label, annotate and delete with
// kubectl on every resource issue 2 lists.
func TestEveryKind(t *testing.T) {
	t.Parallel()
	ns := createNamespace(t, "kinds")
	for _, k := range kinds {
		t.Run(k.resource, func(t *testing.T) {
			t.Parallel()
			checkKind(t, k, ns)
		})
	}
}

func checkKind(t *testing.T, k kind, ns string) {
	name := "e2e-" + strings.ToLower(strings.ReplaceAll(k.kind, ".", "-"))
	if k.apiVersion == "events.k8s.io/v1" {
		name += "-v1"
	}
	manifest := func(n string) string {
		return strings.NewReplacer("NAME", n, "NS", ns).Replace(k.manifest)
	}
	scope := []string{}
	if k.namespaced {
		scope = []string{"-n", ns}
	}
	get := func(args ...string) []string { return append(append([]string{"get", k.resource}, args...), scope...) }
	ref := k.resource + "/" + name

	// create, then create again: AlreadyExists.
	out := runIn(t, manifest(name), append([]string{"create", "-f", "-"}, scope...)...)
	if want := k.nameOutput + "/" + name + " created"; !strings.Contains(out, want) {
		t.Errorf("create: got %q, want %q", out, want)
	}
	runFailIn(t, manifest(name), fmt.Sprintf("Error from server (AlreadyExists): error when creating \"STDIN\": %s %q already exists", groupResource(k), name),
		append([]string{"create", "-f", "-"}, scope...)...)

	// apply creates a second object, and applying it again changes nothing.
	applied := name + "-applied"
	if out := runIn(t, manifest(applied), append([]string{"apply", "-f", "-"}, scope...)...); !strings.Contains(out, applied+" created") {
		t.Errorf("first apply: got %q, want created", out)
	}
	rv := jsonpath(t, "{.metadata.resourceVersion}", get(applied)...)
	if out := runIn(t, manifest(applied), append([]string{"apply", "-f", "-"}, scope...)...); !strings.Contains(out, applied+" unchanged") {
		t.Errorf("second apply: got %q, want unchanged", out)
	}
	if rv2 := jsonpath(t, "{.metadata.resourceVersion}", get(applied)...); rv2 != rv {
		t.Errorf("second apply changed resourceVersion %s -> %s", rv, rv2)
	}

	// get as a table, wide table, YAML, JSON, jsonpath and name.
	checkHeaders(t, run(t, get(name)...), k.headers, name)
	checkHeaders(t, run(t, get(name, "-o", "wide")...), k.wideHeaders, name)
	checkHeaders(t, run(t, get()...), k.headers, name)
	var fromYAML, fromJSON map[string]any
	if err := yaml.Unmarshal([]byte(run(t, get(name, "-o", "yaml")...)), &fromYAML); err != nil {
		t.Fatalf("-o yaml: %v", err)
	}
	if err := json.Unmarshal([]byte(run(t, get(name, "-o", "json")...)), &fromJSON); err != nil {
		t.Fatalf("-o json: %v", err)
	}
	for _, obj := range []map[string]any{fromYAML, fromJSON} {
		meta, _ := obj["metadata"].(map[string]any)
		if obj["kind"] != k.kind || obj["apiVersion"] != k.apiVersion || meta["name"] != name || meta["uid"] == nil || meta["resourceVersion"] == nil || meta["creationTimestamp"] == nil {
			t.Errorf("get -o yaml/json: kind %v apiVersion %v metadata %v", obj["kind"], obj["apiVersion"], meta)
		}
	}
	if got := jsonpath(t, "{.kind}/{.metadata.name}", get(name)...); got != k.kind+"/"+name {
		t.Errorf("-o jsonpath: got %q", got)
	}
	if got := strings.TrimSpace(run(t, get(name, "-o", "name")...)); got != k.nameOutput+"/"+name {
		t.Errorf("-o name: got %q, want %q", got, k.nameOutput+"/"+name)
	}

	// describe.
	desc := run(t, append([]string{"describe", ref}, scope...)...)
	if !regexp.MustCompile(`(?m)^Name:\s+` + regexp.QuoteMeta(name) + `$`).MatchString(desc) {
		t.Errorf("describe: no Name line:\n%s", desc)
	}

	// patch three ways, then edit.
	leaf := k.field[strings.LastIndex(k.field, "/")+1:]
	fieldExpr := "{" + strings.ReplaceAll(k.field, "/", ".") + "}"
	checkField := func(step, want string) {
		t.Helper()
		var v any
		if err := json.Unmarshal([]byte(want), &v); err != nil {
			t.Fatal(err)
		}
		if got := jsonpath(t, fieldExpr, get(name)...); got != fmt.Sprint(v) {
			t.Errorf("after %s: %s = %q, want %v", step, k.field, got, v)
		}
	}
	for i, typ := range []string{"strategic", "merge", "json"} {
		body := nestedPatch(k.field, k.values[i])
		if typ == "json" {
			body = fmt.Sprintf(`[{"op":"add","path":%q,"value":%s}]`, k.field, k.values[i])
		}
		out := run(t, append([]string{"patch", ref, "--type", typ, "-p", body}, scope...)...)
		if !strings.Contains(out, " patched") {
			t.Errorf("patch --type %s: got %q", typ, out)
		}
		checkField("patch --type "+typ, k.values[i])
	}
	sedExpr := fmt.Sprintf("s/^( *)%s: %s$/\\1%s: %s/", leaf, regexp.QuoteMeta(yamlScalar(t, k.values[2])), leaf, yamlScalar(t, k.values[3]))
	out = runWith(t, server, "", []string{"EDITOR=" + scratch + "/editor.sh", "EDIT_SED=" + sedExpr}, append([]string{"edit", ref}, scope...)...)
	if !strings.Contains(out, " edited") {
		t.Errorf("edit: got %q", out)
	}
	checkField("edit", k.values[3])

	// label and annotate, overwrite and remove.
	run(t, append([]string{"label", ref, "e2e=one"}, scope...)...)
	runFail(t, "already has a value (one)", append([]string{"label", ref, "e2e=two"}, scope...)...)
	run(t, append([]string{"label", ref, "e2e=two", "--overwrite"}, scope...)...)
	if got := jsonpath(t, "{.metadata.labels.e2e}", get(name)...); got != "two" {
		t.Errorf("label: got %q", got)
	}
	if got := strings.TrimSpace(run(t, get("-l", "e2e=two", "-o", "name")...)); got != k.nameOutput+"/"+name {
		t.Errorf("get -l e2e=two: got %q", got)
	}
	run(t, append([]string{"annotate", ref, "note=hello world"}, scope...)...)
	if got := jsonpath(t, "{.metadata.annotations.note}", get(name)...); got != "hello world" {
		t.Errorf("annotate: got %q", got)
	}
	run(t, append([]string{"label", ref, "e2e-"}, scope...)...)
	run(t, append([]string{"annotate", ref, "note-"}, scope...)...)
	if got := jsonpath(t, "{.metadata.labels.e2e}{.metadata.annotations.note}", get(name)...); got != "" {
		t.Errorf("label/annotate removal left %q", got)
	}

	// delete; a second get is NotFound.
	if k.resource == "namespaces" {
		return // TestNamespaceLifecycle: a namespace only goes Terminating
	}
	out = run(t, append([]string{"delete", k.resource, name, applied}, scope...)...)
	if !strings.Contains(out, name+"\" deleted") {
		t.Errorf("delete: got %q", out)
	}
	runFail(t, fmt.Sprintf("Error from server (NotFound): %s %q not found", groupResource(k), name), get(name)...)
}

// groupResource is how API errors name a resource: "pods", "deployments.apps".
func groupResource(k kind) string {
	plural := strings.SplitN(k.resource, ".", 2)[0]
	if g, _, ok := strings.Cut(k.apiVersion, "/"); ok {
		return plural + "." + g
	}
	return plural
}

// checkHeaders checks a table's header line and that name is in a row.
func checkHeaders(t *testing.T, table string, want []string, name string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(table, "\n"), "\n")
	got := regexp.MustCompile(`\s{2,}`).Split(strings.TrimSpace(lines[0]), -1)
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("table headers: got %q, want %q\n%s", got, want, table)
	}
	// Event tables name no object but in -o wide, as upstream.
	if slices.Contains(want, "NAME") && !strings.Contains(table, name) {
		t.Errorf("table lacks %s:\n%s", name, table)
	}
}

// nestedPatch turns a JSON pointer over map keys and a JSON value into a
// merge patch body.
func nestedPatch(pointer, value string) string {
	keys := strings.Split(strings.TrimPrefix(pointer, "/"), "/")
	body := value
	for i := len(keys) - 1; i >= 0; i-- {
		body = fmt.Sprintf("{%q:%s}", keys[i], body)
	}
	return body
}

// yamlScalar is how a JSON value looks in kubectl's YAML.
func yamlScalar(t *testing.T, jsonValue string) string {
	var v any
	if err := json.Unmarshal([]byte(jsonValue), &v); err != nil {
		t.Fatal(err)
	}
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}
