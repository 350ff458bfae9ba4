package openapi

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeproof/kubeproof/impl/apiserver/resource"
)

// The operations are first described in a form independent of the OpenAPI
// version, then written out as Swagger 2.0 and as OpenAPI 3.0.

// pathItem is one URL path and the operations served on it.
type pathItem struct {
	path       string
	parameters []parameter // shared by all operations of the path
	operations []operation
}

// operation is one HTTP method on a path.
type operation struct {
	method      string // get, put, post, patch, delete
	id          string // upstream-style operationId, e.g. listCoreV1NamespacedPod
	tag         string // e.g. core_v1
	description string
	action      string // x-kubernetes-action: get, list, post, put, patch, delete, deletecollection, watch, watchlist
	gvk         schema.GroupVersionKind
	parameters  []parameter
	body        reflect.Type // request body type, nil if none
	consumes    []string     // request body media types
	produces    []string
	responses   []response
}

type response struct {
	code        int
	description string
	body        reflect.Type
}

// parameter is a path or query parameter of a scalar type.
type parameter struct {
	name, in, typ, description string
	required, uniqueItems      bool
}

// Media types of request and response bodies.
var (
	// objectMediaTypes are what every read or write can answer with.
	objectMediaTypes = []string{"application/json", "application/yaml", "application/vnd.kubernetes.protobuf"}
	// watchMediaTypes add the streaming forms lists and watches can answer with.
	watchMediaTypes = append(slices.Clone(objectMediaTypes),
		"application/json;stream=watch", "application/vnd.kubernetes.protobuf;stream=watch")
	// patchMediaTypes are the patch formats the server applies, server-side
	// apply included.
	patchMediaTypes = []string{
		"application/apply-patch+yaml",
		"application/json-patch+json",
		"application/merge-patch+json",
		"application/strategic-merge-patch+json",
	}
	anyMediaType = []string{"*/*"}
)

// The parameters, with brief descriptions of our own.
var (
	paramName      = parameter{name: "name", in: "path", typ: "string", required: true, uniqueItems: true, description: "name of the object"}
	paramNamespace = parameter{name: "namespace", in: "path", typ: "string", required: true, uniqueItems: true, description: "namespace of the object"}
	paramPretty    = parameter{name: "pretty", in: "query", typ: "string", uniqueItems: true, description: "if 'true', the output is indented"}

	paramAllowWatchBookmarks  = parameter{name: "allowWatchBookmarks", in: "query", typ: "boolean", uniqueItems: true, description: "whether a watch may send BOOKMARK events"}
	paramContinue             = parameter{name: "continue", in: "query", typ: "string", uniqueItems: true, description: "continue token from a previous paginated list"}
	paramFieldSelector        = parameter{name: "fieldSelector", in: "query", typ: "string", uniqueItems: true, description: "select objects by their fields"}
	paramLabelSelector        = parameter{name: "labelSelector", in: "query", typ: "string", uniqueItems: true, description: "select objects by their labels"}
	paramLimit                = parameter{name: "limit", in: "query", typ: "integer", uniqueItems: true, description: "maximum number of objects in one list response"}
	paramResourceVersion      = parameter{name: "resourceVersion", in: "query", typ: "string", uniqueItems: true, description: "resource version to read at or watch from"}
	paramResourceVersionMatch = parameter{name: "resourceVersionMatch", in: "query", typ: "string", uniqueItems: true, description: "how resourceVersion applies to a list: NotOlderThan or Exact"}
	paramSendInitialEvents    = parameter{name: "sendInitialEvents", in: "query", typ: "boolean", uniqueItems: true, description: "whether a watch starts with the current objects"}
	paramTimeoutSeconds       = parameter{name: "timeoutSeconds", in: "query", typ: "integer", uniqueItems: true, description: "how long a list or watch may run"}
	paramWatch                = parameter{name: "watch", in: "query", typ: "boolean", uniqueItems: true, description: "stream changes instead of listing"}

	paramDryRun          = parameter{name: "dryRun", in: "query", typ: "string", uniqueItems: true, description: "if All, the request is processed but not persisted"}
	paramFieldManager    = parameter{name: "fieldManager", in: "query", typ: "string", uniqueItems: true, description: "name of the actor making the change"}
	paramFieldValidation = parameter{name: "fieldValidation", in: "query", typ: "string", uniqueItems: true, description: "how unknown or duplicate fields are handled: Ignore, Warn or Strict"}
	paramForce           = parameter{name: "force", in: "query", typ: "boolean", uniqueItems: true, description: "whether an apply request takes over conflicting fields"}

	paramGracePeriodSeconds = parameter{name: "gracePeriodSeconds", in: "query", typ: "integer", uniqueItems: true, description: "seconds before the object is deleted"}
	paramIgnoreStoreReadErr = parameter{name: "ignoreStoreReadErrorWithClusterBreakingPotential", in: "query", typ: "boolean", uniqueItems: true, description: "delete objects that cannot be read from storage"}
	paramOrphanDependents   = parameter{name: "orphanDependents", in: "query", typ: "boolean", uniqueItems: true, description: "deprecated: use propagationPolicy"}
	paramPropagationPolicy  = parameter{name: "propagationPolicy", in: "query", typ: "string", uniqueItems: true, description: "garbage collection of dependents: Orphan, Background or Foreground"}
)

var (
	listParameters = []parameter{paramAllowWatchBookmarks, paramContinue, paramFieldSelector, paramLabelSelector,
		paramLimit, paramResourceVersion, paramResourceVersionMatch, paramSendInitialEvents, paramTimeoutSeconds, paramWatch}
	writeParameters            = []parameter{paramDryRun, paramFieldManager, paramFieldValidation}
	patchParameters            = []parameter{paramDryRun, paramFieldManager, paramFieldValidation, paramForce}
	deleteParameters           = []parameter{paramDryRun, paramGracePeriodSeconds, paramIgnoreStoreReadErr, paramOrphanDependents, paramPropagationPolicy}
	deleteCollectionParameters = []parameter{paramContinue, paramDryRun, paramFieldSelector, paramGracePeriodSeconds,
		paramIgnoreStoreReadErr, paramLabelSelector, paramLimit, paramOrphanDependents, paramPropagationPolicy,
		paramResourceVersion, paramResourceVersionMatch, paramSendInitialEvents, paramTimeoutSeconds}
)

// Types the operations refer to besides the resources' own.
var (
	typeStatus        = reflect.TypeFor[metav1.Status]()
	typeDeleteOptions = reflect.TypeFor[metav1.DeleteOptions]()
	typeWatchEvent    = reflect.TypeFor[metav1.WatchEvent]()
	typePatch         = reflect.TypeFor[metav1.Patch]()
	typeScale         = reflect.TypeFor[autoscalingv1.Scale]()
	typeBinding       = reflect.TypeFor[corev1.Binding]()
)

var (
	gvkScale   = autoscalingv1.SchemeGroupVersion.WithKind("Scale")
	gvkBinding = corev1.SchemeGroupVersion.WithKind("Binding")
)

// allVerbs are the verbs assumed for a resource that lists none.
var allVerbs = []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}

// servedResource is a resource with the reflected types of its objects.
type servedResource struct {
	*resource.Resource
	object, list reflect.Type
}

func newServedResource(r *resource.Resource) (servedResource, error) {
	if r.New == nil || r.NewList == nil {
		return servedResource{}, fmt.Errorf("resource %s has no New or NewList", r.GroupVersionResource())
	}
	object, list := reflect.TypeOf(r.New()), reflect.TypeOf(r.NewList())
	for _, t := range []reflect.Type{object, list} {
		if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct || t.Elem().Name() == "" {
			return servedResource{}, fmt.Errorf("resource %s: %v is not a pointer to a named struct", r.GroupVersionResource(), t)
		}
	}
	return servedResource{Resource: r, object: object.Elem(), list: list.Elem()}, nil
}

// groupVersionPath is the URL prefix of a group/version without the leading
// slash: "api/v1" or "apis/apps/v1". It is also its key in the /openapi/v3
// index.
func groupVersionPath(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "api/" + gv.Version
	}
	return "apis/" + gv.Group + "/" + gv.Version
}

// operationPrefix is the group/version part of upstream's operation ids:
// "CoreV1", "AppsV1", "RbacAuthorizationV1", "CoordinationV1".
func operationPrefix(gv schema.GroupVersion) string {
	group := strings.TrimSuffix(gv.Group, ".k8s.io")
	if group == "" {
		group = "core"
	}
	var b strings.Builder
	for part := range strings.SplitSeq(group, ".") {
		b.WriteString(capitalize(part))
	}
	b.WriteString(capitalize(gv.Version))
	return b.String()
}

// operationTag is upstream's tag of a group/version: "core_v1", "apps_v1",
// "rbacAuthorization_v1".
func operationTag(gv schema.GroupVersion) string {
	group := strings.TrimSuffix(gv.Group, ".k8s.io")
	if group == "" {
		group = "core"
	}
	parts := strings.Split(group, ".")
	for i := 1; i < len(parts); i++ {
		parts[i] = capitalize(parts[i])
	}
	return strings.Join(parts, "") + "_" + gv.Version
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// pathItems describes every path r is served at.
func (r servedResource) pathItems() []pathItem {
	verbs := r.Verbs
	if len(verbs) == 0 {
		verbs = allVerbs
	}
	has := func(verb string) bool { return slices.Contains(verbs, verb) }

	gv := r.GroupVersion
	prefix := "/" + groupVersionPath(gv)
	gvk := r.GroupVersionKind()
	opPrefix, tag := operationPrefix(gv), operationTag(gv)
	scoped, kind := "", r.Kind
	collection := prefix + "/" + r.Name
	watchCollection := prefix + "/watch/" + r.Name
	scopeParams := []parameter{}
	if r.Namespaced {
		scoped = "Namespaced"
		collection = prefix + "/namespaces/{namespace}/" + r.Name
		watchCollection = prefix + "/watch/namespaces/{namespace}/" + r.Name
		scopeParams = []parameter{paramNamespace}
	}
	item := collection + "/{name}"
	itemParams := append([]parameter{paramName}, scopeParams...)
	op := func(method, verb, suffix, action, description string) operation {
		return operation{
			method: method, id: verb + opPrefix + scoped + kind + suffix, tag: tag,
			description: description, action: action, gvk: gvk, produces: objectMediaTypes,
		}
	}
	deleteResponse := typeStatus
	if r.GracefulDelete != nil {
		// Graceful deletions answer with the object, now carrying its
		// deletionTimestamp.
		deleteResponse = r.object
	}

	var items []pathItem

	// The collection: list, create, deletecollection.
	coll := pathItem{path: collection, parameters: append(slices.Clone(scopeParams), paramPretty)}
	if has("list") {
		o := op("get", "list", "", "list", "list or watch objects of kind "+kind)
		o.parameters, o.produces = listParameters, watchMediaTypes
		o.responses = []response{{200, "OK", r.list}}
		coll.operations = append(coll.operations, o)
	}
	if has("create") {
		o := op("post", "create", "", "post", "create a "+kind)
		o.parameters, o.body, o.consumes = writeParameters, r.object, anyMediaType
		o.responses = []response{{200, "OK", r.object}, {201, "Created", r.object}, {202, "Accepted", r.object}}
		coll.operations = append(coll.operations, o)
	}
	if has("deletecollection") {
		o := op("delete", "delete", "", "deletecollection", "delete a collection of "+kind)
		o.id = "delete" + opPrefix + "Collection" + scoped + kind
		o.parameters, o.body, o.consumes = deleteCollectionParameters, typeDeleteOptions, anyMediaType
		o.responses = []response{{200, "OK", typeStatus}}
		coll.operations = append(coll.operations, o)
	}
	if len(coll.operations) > 0 {
		items = append(items, coll)
	}

	// One object: read, replace, patch, delete.
	obj := pathItem{path: item, parameters: append(slices.Clone(itemParams), paramPretty)}
	if has("get") {
		o := op("get", "read", "", "get", "read the specified "+kind)
		o.responses = []response{{200, "OK", r.object}}
		obj.operations = append(obj.operations, o)
	}
	if has("update") {
		o := op("put", "replace", "", "put", "replace the specified "+kind)
		o.parameters, o.body, o.consumes = writeParameters, r.object, anyMediaType
		o.responses = []response{{200, "OK", r.object}, {201, "Created", r.object}}
		obj.operations = append(obj.operations, o)
	}
	if has("patch") {
		o := op("patch", "patch", "", "patch", "partially update the specified "+kind)
		o.parameters, o.body, o.consumes = patchParameters, typePatch, patchMediaTypes
		o.responses = []response{{200, "OK", r.object}, {201, "Created", r.object}}
		obj.operations = append(obj.operations, o)
	}
	if has("delete") {
		o := op("delete", "delete", "", "delete", "delete a "+kind)
		o.parameters, o.body, o.consumes = deleteParameters, typeDeleteOptions, anyMediaType
		o.responses = []response{{200, "OK", deleteResponse}, {202, "Accepted", deleteResponse}}
		obj.operations = append(obj.operations, o)
	}
	if len(obj.operations) > 0 {
		items = append(items, obj)
	}

	// Lists across all namespaces.
	if r.Namespaced && has("list") {
		o := op("get", "list", "ForAllNamespaces", "list", "list or watch objects of kind "+kind)
		o.id = "list" + opPrefix + kind + "ForAllNamespaces"
		o.parameters, o.produces = listParameters, watchMediaTypes
		o.responses = []response{{200, "OK", r.list}}
		items = append(items, pathItem{path: prefix + "/" + r.Name, parameters: []parameter{paramPretty}, operations: []operation{o}})
	}

	// The deprecated watch paths.
	if has("watch") {
		watchParams := append(slices.Clone(listParameters), paramPretty)
		o := op("get", "watch", "List", "watchlist", "watch changes to a list of "+kind)
		o.produces, o.responses = watchMediaTypes, []response{{200, "OK", typeWatchEvent}}
		items = append(items, pathItem{path: watchCollection, parameters: append(slices.Clone(scopeParams), watchParams...), operations: []operation{o}})

		o = op("get", "watch", "", "watch", "watch changes to a "+kind)
		o.produces, o.responses = watchMediaTypes, []response{{200, "OK", typeWatchEvent}}
		items = append(items, pathItem{path: watchCollection + "/{name}", parameters: append(slices.Clone(itemParams), watchParams...), operations: []operation{o}})

		if r.Namespaced {
			o = op("get", "watch", "ListForAllNamespaces", "watchlist", "watch changes to a list of "+kind)
			o.id = "watch" + opPrefix + kind + "ListForAllNamespaces"
			o.produces, o.responses = watchMediaTypes, []response{{200, "OK", typeWatchEvent}}
			items = append(items, pathItem{path: prefix + "/watch/" + r.Name, parameters: watchParams, operations: []operation{o}})
		}
	}

	// Subresources.
	sub := func(name, suffix string, object reflect.Type, subGVK schema.GroupVersionKind) pathItem {
		p := pathItem{path: item + "/" + name, parameters: append(slices.Clone(itemParams), paramPretty)}
		get := op("get", "read", suffix, "get", "read "+name+" of the specified "+kind)
		get.gvk, get.responses = subGVK, []response{{200, "OK", object}}
		put := op("put", "replace", suffix, "put", "replace "+name+" of the specified "+kind)
		put.gvk, put.parameters, put.body, put.consumes = subGVK, writeParameters, object, anyMediaType
		put.responses = []response{{200, "OK", object}, {201, "Created", object}}
		patch := op("patch", "patch", suffix, "patch", "partially update "+name+" of the specified "+kind)
		patch.gvk, patch.parameters, patch.body, patch.consumes = subGVK, patchParameters, typePatch, patchMediaTypes
		patch.responses = []response{{200, "OK", object}, {201, "Created", object}}
		p.operations = []operation{get, put, patch}
		return p
	}
	if r.Status != nil {
		items = append(items, sub("status", "Status", r.object, gvk))
	}
	if r.EphemeralContainers != nil {
		items = append(items, sub("ephemeralcontainers", "Ephemeralcontainers", r.object, gvk))
	}
	if r.Resize != nil {
		items = append(items, sub("resize", "Resize", r.object, gvk))
	}
	if r.Scale != nil {
		items = append(items, sub("scale", "Scale", typeScale, gvkScale))
	}
	if r.GroupVersion == corev1.SchemeGroupVersion && r.Name == "pods" {
		// pods/binding has no field in resource.Resource: every API server
		// serving core/v1 pods serves it (the scheduler's bind).
		o := op("post", "create", "Binding", "post", "bind the specified Pod to a node")
		o.gvk = gvkBinding
		o.parameters, o.body, o.consumes = writeParameters, typeBinding, anyMediaType
		o.responses = []response{{200, "OK", typeBinding}, {201, "Created", typeBinding}, {202, "Accepted", typeBinding}}
		items = append(items, pathItem{path: item + "/binding", parameters: append(slices.Clone(itemParams), paramPretty), operations: []operation{o}})
		// The legacy bindings resource, served with it: a create of a
		// Binding in the pod's namespace (createCoreV1NamespacedBinding).
		o = op("post", "create", "", "post", "create a Binding")
		o.id = "create" + opPrefix + scoped + "Binding"
		o.gvk = gvkBinding
		o.parameters, o.body, o.consumes = writeParameters, typeBinding, anyMediaType
		o.responses = []response{{200, "OK", typeBinding}, {201, "Created", typeBinding}, {202, "Accepted", typeBinding}}
		items = append(items, pathItem{path: prefix + "/namespaces/{namespace}/bindings", parameters: []parameter{paramNamespace, paramPretty}, operations: []operation{o}})
	}
	return items
}
