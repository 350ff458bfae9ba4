package openapi

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/cli-runtime/pkg/resource"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/openapi3"
	"k8s.io/client-go/rest"
	explainv2 "k8s.io/kubectl/pkg/explain/v2"
	kubectlopenapi "k8s.io/kubectl/pkg/util/openapi"
)

var (
	podGVK        = corev1.SchemeGroupVersion.WithKind("Pod")
	deploymentGVK = appsv1.SchemeGroupVersion.WithKind("Deployment")
	podGVR        = corev1.SchemeGroupVersion.WithResource("pods")
	deploymentGVR = appsv1.SchemeGroupVersion.WithResource("deployments")
)

// testServer serves the OpenAPI handler of the issue's resources (and 404
// for everything else) and returns client-go's clients for it.
func testServer(t *testing.T) (*discovery.DiscoveryClient, dynamic.Interface, *httptest.Server) {
	t.Helper()
	server := httptest.NewServer(newTestHandler(t))
	t.Cleanup(server.Close)
	config := &rest.Config{Host: server.URL}
	disco, err := discovery.NewDiscoveryClientForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Close the clients' idle connections so no goroutine outlives the test.
		for _, c := range []rest.Interface{disco.RESTClient()} {
			if rc, ok := c.(*rest.RESTClient); ok && rc.Client != nil {
				rc.Client.CloseIdleConnections()
			}
		}
		server.CloseClientConnections()
	})
	return disco, dyn, server
}

func TestClientGoParsesV2(t *testing.T) {
	disco, _, _ := testServer(t)
	doc, err := disco.OpenAPISchema() // asks for the protobuf form
	if err != nil {
		t.Fatalf("OpenAPISchema: %v", err)
	}
	if got := doc.GetSwagger(); got != "2.0" {
		t.Errorf("swagger = %q", got)
	}
	resources, err := kubectlopenapi.NewOpenAPIData(doc)
	if err != nil {
		t.Fatalf("kubectl's NewOpenAPIData: %v", err)
	}
	for _, gvk := range []schema.GroupVersionKind{podGVK, deploymentGVK, corev1.SchemeGroupVersion.WithKind("ConfigMap"),
		{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}} {
		if resources.LookupResource(gvk) == nil {
			t.Errorf("v2: no model for %v", gvk)
		}
		consumes := resources.GetConsumes(gvk, "PATCH")
		if !strings.Contains(strings.Join(consumes, ","), "application/strategic-merge-patch+json") {
			t.Errorf("v2: PATCH of %v consumes %v, want strategic merge patch among them", gvk, consumes)
		}
	}
}

func TestClientGoParsesV3(t *testing.T) {
	disco, _, _ := testServer(t)
	paths, err := disco.OpenAPIV3().Paths()
	if err != nil {
		t.Fatalf("Paths: %v", err)
	}
	if _, ok := paths["apis/apps/v1"]; !ok {
		t.Errorf("index lacks apis/apps/v1: %v", paths)
	}
	root := openapi3.NewRoot(disco.OpenAPIV3())
	gvs, err := root.GroupVersions()
	if err != nil {
		t.Fatal(err)
	}
	if len(gvs) != 6 {
		t.Errorf("group versions = %v", gvs)
	}
	for _, gv := range gvs {
		doc, err := root.GVSpec(gv)
		if err != nil {
			t.Fatalf("GVSpec(%v): %v", gv, err)
		}
		if doc.Components == nil || len(doc.Components.Schemas) == 0 || doc.Paths == nil || len(doc.Paths.Paths) == 0 {
			t.Errorf("GVSpec(%v) has no schemas or paths", gv)
		}
	}
	// The protobuf form is served too.
	gv := paths["api/v1"]
	pb, err := gv.Schema("application/com.github.proto-openapi.spec.v3@v1.0+protobuf")
	if err != nil || len(pb) == 0 || pb[0] == '{' {
		t.Errorf("protobuf v3 schema: %d bytes, err %v", len(pb), err)
	}
}

func explain(t *testing.T, disco *discovery.DiscoveryClient, gvr schema.GroupVersionResource, path ...string) string {
	t.Helper()
	var out bytes.Buffer
	if err := explainv2.PrintModelDescription(path, &out, disco.OpenAPIV3(), gvr, false, 0, "plaintext"); err != nil {
		t.Fatalf("explain %s %v: %v", gvr.Resource, path, err)
	}
	return out.String()
}

func TestKubectlExplain(t *testing.T) {
	disco, _, _ := testServer(t)

	out := explain(t, disco, podGVR, "spec", "containers")
	for _, want := range []string{"KIND:       Pod", "VERSION:    v1", "FIELD: containers <[]Container>",
		"image\t<string>", "name\t<string> -required-", "ports\t<[]ContainerPort>", "resources\t<ResourceRequirements>"} {
		if !strings.Contains(out, want) {
			t.Errorf("explain pods.spec.containers lacks %q:\n%s", want, out)
		}
	}

	out = explain(t, disco, deploymentGVR, "spec")
	for _, want := range []string{"GROUP:      apps", "KIND:       Deployment", "replicas\t<integer>",
		"selector\t<LabelSelector> -required-", "template\t<PodTemplateSpec> -required-", "strategy\t<DeploymentStrategy>"} {
		if !strings.Contains(out, want) {
			t.Errorf("explain deployments.spec lacks %q:\n%s", want, out)
		}
	}

	out = explain(t, disco, deploymentGVR, "spec", "template", "spec", "containers", "resources", "limits")
	if !strings.Contains(out, "FIELD: limits <map[string]Quantity>") {
		t.Errorf("explain of a quantity map:\n%s", out)
	}

	var buf bytes.Buffer
	err := explainv2.PrintModelDescription([]string{"spec", "nosuchfield"}, &buf, disco.OpenAPIV3(), podGVR, false, 0, "plaintext")
	if err == nil || !strings.Contains(err.Error(), `field "nosuchfield" does not exist`) {
		t.Errorf("explain of a missing field: err %v", err)
	}
}

func TestFieldValidationIsAdvertised(t *testing.T) {
	disco, dyn, _ := testServer(t)
	v3 := resource.NewQueryParamVerifierV3(dyn, disco.OpenAPIV3(), resource.QueryParamFieldValidation)
	v2 := resource.NewQueryParamVerifier(dyn, disco, resource.QueryParamFieldValidation)
	for name, verifier := range map[string]resource.Verifier{"v3": v3, "v2": v2} {
		for _, gvk := range []schema.GroupVersionKind{podGVK, deploymentGVK,
			{Group: "coordination.k8s.io", Version: "v1", Kind: "Lease"}} {
			if err := verifier.HasSupport(gvk); err != nil {
				t.Errorf("%s verifier: %v does not support fieldValidation: %v", name, gvk, err)
			}
		}
	}
	// A kind the server does not serve has no such support.
	job := schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}
	if err := v3.HasSupport(job); !resource.IsParamUnsupportedError(err) {
		t.Errorf("v3 verifier on %v: %v, want a param-unsupported error", job, err)
	}
}

// The patch kubectl apply computes for adding a container: with the merge
// key known, the containers list is merged by name (and its order kept with
// $setElementOrder) instead of being replaced.
const (
	podOriginal = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"a","image":"a:1"}]}}`
	podModified = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"a","image":"a:1"},{"name":"b","image":"b:1"}]}}`
	podCurrent  = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","uid":"u"},"spec":{"containers":[{"name":"a","image":"a:1","imagePullPolicy":"IfNotPresent"}]}}`
	mergedPatch = `{"spec":{"$setElementOrder/containers":[{"name":"a"},{"name":"b"}],"containers":[{"image":"b:1","name":"b"}]}}`
)

func TestStrategicMergePatchMetaV2(t *testing.T) {
	disco, _, _ := testServer(t)
	doc, err := disco.OpenAPISchema()
	if err != nil {
		t.Fatal(err)
	}
	resources, err := kubectlopenapi.NewOpenAPIData(doc)
	if err != nil {
		t.Fatal(err)
	}
	meta := strategicpatch.NewPatchMetaFromOpenAPI(resources.LookupResource(podGVK))
	spec, _, err := meta.LookupPatchMetadataForStruct("spec")
	if err != nil {
		t.Fatal(err)
	}
	_, containers, err := spec.LookupPatchMetadataForSlice("containers")
	if err != nil {
		t.Fatal(err)
	}
	if containers.GetPatchMergeKey() != "name" || strings.Join(containers.GetPatchStrategies(), ",") != "merge" {
		t.Errorf("containers: merge key %q, strategies %v", containers.GetPatchMergeKey(), containers.GetPatchStrategies())
	}
	patch, err := strategicpatch.CreateThreeWayMergePatch([]byte(podOriginal), []byte(podModified), []byte(podCurrent), meta, false)
	if err != nil {
		t.Fatal(err)
	}
	if string(patch) != mergedPatch {
		t.Errorf("patch = %s\nwant %s", patch, mergedPatch)
	}
}

func TestStrategicMergePatchMetaV3(t *testing.T) {
	disco, _, _ := testServer(t)
	gvSpec, err := openapi3.NewRoot(disco.OpenAPIV3()).GVSpec(corev1.SchemeGroupVersion)
	if err != nil {
		t.Fatal(err)
	}
	// As kubectl apply does: find the schema carrying the kind's GVK.
	var meta *strategicpatch.PatchMetaFromOpenAPIV3
	for _, s := range gvSpec.Components.Schemas {
		var gvks []map[string]string
		if err := s.Extensions.GetObject("x-kubernetes-group-version-kind", &gvks); err != nil {
			continue
		}
		for _, gvk := range gvks {
			if gvk["group"] == "" && gvk["version"] == "v1" && gvk["kind"] == "Pod" {
				meta = &strategicpatch.PatchMetaFromOpenAPIV3{Schema: s, SchemaList: gvSpec.Components.Schemas}
			}
		}
	}
	if meta == nil {
		t.Fatal("no v3 schema carries the Pod GVK")
	}
	spec, _, err := meta.LookupPatchMetadataForStruct("spec")
	if err != nil {
		t.Fatal(err)
	}
	_, containers, err := spec.LookupPatchMetadataForSlice("containers")
	if err != nil {
		t.Fatal(err)
	}
	if containers.GetPatchMergeKey() != "name" {
		t.Errorf("containers: merge key %q", containers.GetPatchMergeKey())
	}
	patch, err := strategicpatch.CreateThreeWayMergePatch([]byte(podOriginal), []byte(podModified), []byte(podCurrent), *meta, false)
	if err != nil {
		t.Fatal(err)
	}
	if string(patch) != mergedPatch {
		t.Errorf("patch = %s\nwant %s", patch, mergedPatch)
	}

	// kubectl apply's check that the kind takes strategic merge patches.
	found := false
	for _, p := range gvSpec.Paths.Paths {
		if p.Patch == nil {
			continue
		}
		var gvk map[string]string
		if p.Patch.Extensions.GetObject("x-kubernetes-group-version-kind", &gvk) == nil && gvk["kind"] == "Pod" {
			_, found = p.Patch.RequestBody.Content["application/strategic-merge-patch+json"]
			break
		}
	}
	if !found {
		t.Error("Pod's PATCH operation does not take application/strategic-merge-patch+json")
	}
}

// A v3 document's operations, as JSON, for checks of their shape.
func TestOperationsV3(t *testing.T) {
	disco, _, _ := testServer(t)
	raw, err := openapi3.NewRoot(disco.OpenAPIV3()).GVSpecAsMap(appsv1.SchemeGroupVersion)
	if err != nil {
		t.Fatal(err)
	}
	paths := raw["paths"].(map[string]any)
	op := func(path, method string) map[string]any {
		t.Helper()
		item, ok := paths[path].(map[string]any)
		if !ok {
			t.Fatalf("no path %s", path)
		}
		o, ok := item[method].(map[string]any)
		if !ok {
			t.Fatalf("no %s on %s", method, path)
		}
		return o
	}
	params := func(o map[string]any) string {
		var names []string
		list, _ := o["parameters"].([]any)
		for _, p := range list {
			names = append(names, p.(map[string]any)["name"].(string))
		}
		return strings.Join(names, ",")
	}
	for _, tc := range []struct{ path, method, id, action, kind, params string }{
		{"/apis/apps/v1/namespaces/{namespace}/deployments", "get", "listAppsV1NamespacedDeployment", "list", "Deployment",
			"allowWatchBookmarks,continue,fieldSelector,labelSelector,limit,resourceVersion,resourceVersionMatch,sendInitialEvents,timeoutSeconds,watch"},
		{"/apis/apps/v1/namespaces/{namespace}/deployments", "post", "createAppsV1NamespacedDeployment", "post", "Deployment", "dryRun,fieldManager,fieldValidation"},
		{"/apis/apps/v1/namespaces/{namespace}/deployments", "delete", "deleteAppsV1CollectionNamespacedDeployment", "deletecollection", "Deployment",
			"continue,dryRun,fieldSelector,gracePeriodSeconds,ignoreStoreReadErrorWithClusterBreakingPotential,labelSelector,limit,orphanDependents,propagationPolicy,resourceVersion,resourceVersionMatch,sendInitialEvents,timeoutSeconds"},
		{"/apis/apps/v1/namespaces/{namespace}/deployments/{name}", "get", "readAppsV1NamespacedDeployment", "get", "Deployment", ""},
		{"/apis/apps/v1/namespaces/{namespace}/deployments/{name}", "put", "replaceAppsV1NamespacedDeployment", "put", "Deployment", "dryRun,fieldManager,fieldValidation"},
		{"/apis/apps/v1/namespaces/{namespace}/deployments/{name}", "patch", "patchAppsV1NamespacedDeployment", "patch", "Deployment", "dryRun,fieldManager,fieldValidation,force"},
		{"/apis/apps/v1/namespaces/{namespace}/deployments/{name}", "delete", "deleteAppsV1NamespacedDeployment", "delete", "Deployment",
			"dryRun,gracePeriodSeconds,ignoreStoreReadErrorWithClusterBreakingPotential,orphanDependents,propagationPolicy"},
		{"/apis/apps/v1/deployments", "get", "listAppsV1DeploymentForAllNamespaces", "list", "Deployment",
			"allowWatchBookmarks,continue,fieldSelector,labelSelector,limit,resourceVersion,resourceVersionMatch,sendInitialEvents,timeoutSeconds,watch"},
		{"/apis/apps/v1/watch/namespaces/{namespace}/deployments", "get", "watchAppsV1NamespacedDeploymentList", "watchlist", "Deployment", ""},
		{"/apis/apps/v1/watch/namespaces/{namespace}/deployments/{name}", "get", "watchAppsV1NamespacedDeployment", "watch", "Deployment", ""},
		{"/apis/apps/v1/watch/deployments", "get", "watchAppsV1DeploymentListForAllNamespaces", "watchlist", "Deployment", ""},
		{"/apis/apps/v1/namespaces/{namespace}/deployments/{name}/status", "patch", "patchAppsV1NamespacedDeploymentStatus", "patch", "Deployment", "dryRun,fieldManager,fieldValidation,force"},
		{"/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale", "put", "replaceAppsV1NamespacedDeploymentScale", "put", "Scale", "dryRun,fieldManager,fieldValidation"},
	} {
		o := op(tc.path, tc.method)
		gvk := o["x-kubernetes-group-version-kind"].(map[string]any)
		if o["operationId"] != tc.id || o["x-kubernetes-action"] != tc.action || gvk["kind"] != tc.kind || params(o) != tc.params {
			t.Errorf("%s %s: id %v action %v kind %v params %s\nwant id %s action %s kind %s params %s",
				tc.method, tc.path, o["operationId"], o["x-kubernetes-action"], gvk["kind"], params(o), tc.id, tc.action, tc.kind, tc.params)
		}
	}
	// Path parameters sit on the path.
	item := paths["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"].(map[string]any)
	b, _ := json.Marshal(item["parameters"])
	if want := `"name":"name"`; !strings.Contains(string(b), want) || !strings.Contains(string(b), `"name":"namespace"`) {
		t.Errorf("path parameters: %s", b)
	}
	// Subresources of kinds without them are not advertised.
	if _, ok := paths["/apis/apps/v1/namespaces/{namespace}/deployments/{name}/binding"]; ok {
		t.Error("deployments/binding advertised")
	}
}

func TestCoreOperations(t *testing.T) {
	docs, err := buildDocuments(issueResources())
	if err != nil {
		t.Fatal(err)
	}
	paths := jsonOf(t, docs.swagger)["paths"].(map[string]any)
	for path, methods := range map[string]string{
		"/api/v1/namespaces":                                             "delete-,get,post",
		"/api/v1/namespaces/{name}":                                      "delete,get,patch,put",
		"/api/v1/namespaces/{name}/status":                               "get,patch,put",
		"/api/v1/namespaces/{namespace}/pods/{name}/binding":             "post",
		"/api/v1/namespaces/{namespace}/pods/{name}/ephemeralcontainers": "get,patch,put",
		"/api/v1/nodes/{name}/status":                                    "get,patch,put",
		"/apis/rbac.authorization.k8s.io/v1/clusterroles":                "delete,get,post",
	} {
		item, ok := paths[path].(map[string]any)
		if !ok {
			t.Errorf("no path %s", path)
			continue
		}
		for _, m := range strings.Split(methods, ",") {
			name, absent := strings.CutSuffix(m, "-")
			if _, ok := item[name]; ok == absent {
				t.Errorf("%s: %s present = %v, want %v", path, name, ok, !absent)
			}
		}
	}
	// kubectl debug's subresource, named as kube-apiserver names it.
	ec := paths["/api/v1/namespaces/{namespace}/pods/{name}/ephemeralcontainers"].(map[string]any)["patch"].(map[string]any)
	if ec["operationId"] != "patchCoreV1NamespacedPodEphemeralcontainers" || !strings.Contains(mustJSON(t, ec["x-kubernetes-group-version-kind"]), `"kind":"Pod"`) {
		t.Errorf("pods/ephemeralcontainers patch: %s", mustJSON(t, ec))
	}
	// Graceful deletion answers with the object; other deletions with a Status.
	pod := paths["/api/v1/namespaces/{namespace}/pods/{name}"].(map[string]any)["delete"].(map[string]any)
	cm := paths["/api/v1/namespaces/{namespace}/configmaps/{name}"].(map[string]any)["delete"].(map[string]any)
	if got := mustJSON(t, pod["responses"].(map[string]any)["200"]); !strings.Contains(got, "io.k8s.api.core.v1.Pod") {
		t.Errorf("pod delete answers %s", got)
	}
	if got := mustJSON(t, cm["responses"].(map[string]any)["200"]); !strings.Contains(got, "io.k8s.apimachinery.pkg.apis.meta.v1.Status") {
		t.Errorf("configmap delete answers %s", got)
	}
	binding := paths["/api/v1/namespaces/{namespace}/pods/{name}/binding"].(map[string]any)["post"].(map[string]any)
	if got := mustJSON(t, binding["x-kubernetes-group-version-kind"]); got != `{"group":"","kind":"Binding","version":"v1"}` {
		t.Errorf("binding gvk %s", got)
	}
	// The legacy bindings resource: a namespaced create only, as
	// kube-apiserver documents it.
	legacy, ok := paths["/api/v1/namespaces/{namespace}/bindings"].(map[string]any)
	if !ok || len(legacy) != 2 || legacy["post"] == nil {
		t.Fatalf("/api/v1/namespaces/{namespace}/bindings: %s, want parameters and post only", mustJSON(t, legacy))
	}
	post := legacy["post"].(map[string]any)
	if post["operationId"] != "createCoreV1NamespacedBinding" || post["description"] != "create a Binding" ||
		mustJSON(t, post["x-kubernetes-group-version-kind"]) != `{"group":"","kind":"Binding","version":"v1"}` {
		t.Errorf("bindings post: %s", mustJSON(t, post))
	}
	if _, ok := paths["/api/v1/bindings"]; ok {
		t.Error("/api/v1/bindings advertised")
	}
}
