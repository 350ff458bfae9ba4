// Package discovery serves the API discovery documents clients use to learn
// which groups, versions and resources exist: the legacy /api, /apis,
// /apis/<group> and /<prefix>/<group>/<version> documents and the aggregated
// APIGroupDiscoveryList (apidiscovery.k8s.io v2 and v2beta1) that kubectl
// 1.26+ asks for.
package discovery

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	apidiscoveryv2beta1 "k8s.io/api/apidiscovery/v2beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeproof/kubeproof/impl/apiserver/audit"
	"github.com/kubeproof/kubeproof/impl/apiserver/codec"
	"github.com/kubeproof/kubeproof/impl/apiserver/resource"
)

const discoveryGroup = "apidiscovery.k8s.io"

var aggregated = []codec.Conversion{
	{As: "APIGroupDiscoveryList", Group: discoveryGroup, Version: "v2"},
	{As: "APIGroupDiscoveryList", Group: discoveryGroup, Version: "v2beta1"},
}

// Handler serves discovery for a fixed set of resources.
type Handler struct {
	codecs *codec.Codecs
	// groups in serving order; the core group ("") first.
	groups []groupInfo
	// resources by group version.
	lists map[schema.GroupVersion]*metav1.APIResourceList
	// aggregated documents for /api (core) and /apis (the rest).
	coreV2, apisV2           *apidiscoveryv2.APIGroupDiscoveryList
	coreV2beta1, apisV2beta1 *apidiscoveryv2beta1.APIGroupDiscoveryList
}

type groupInfo struct {
	name     string
	versions []string
}

// New builds the discovery documents of resources.
func New(resources []*resource.Resource, codecs *codec.Codecs) (*Handler, error) {
	h := &Handler{codecs: codecs, lists: map[schema.GroupVersion]*metav1.APIResourceList{}}
	seen := map[string]int{}
	add := func(gv schema.GroupVersion) {
		i, ok := seen[gv.Group]
		if !ok {
			seen[gv.Group] = len(h.groups)
			h.groups = append(h.groups, groupInfo{name: gv.Group})
			i = len(h.groups) - 1
		}
		for _, v := range h.groups[i].versions {
			if v == gv.Version {
				return
			}
		}
		h.groups[i].versions = append(h.groups[i].versions, gv.Version)
	}
	// core first, as kube-apiserver lists it.
	for _, r := range resources {
		if r.GroupVersion.Group == "" {
			add(r.GroupVersion)
		}
	}
	for _, r := range resources {
		add(r.GroupVersion)
		l := h.lists[r.GroupVersion]
		if l == nil {
			l = &metav1.APIResourceList{GroupVersion: r.GroupVersion.String()}
			h.lists[r.GroupVersion] = l
		}
		l.APIResources = append(l.APIResources, apiResources(r)...)
	}
	// Each group version's resources sorted by name, a resource's
	// subresources right after it, as kube-apiserver's API installer
	// registers a group version's storage paths in sorted order (the
	// aggregated discovery below keeps it).
	for _, l := range h.lists {
		slices.SortStableFunc(l.APIResources, func(a, b metav1.APIResource) int { return strings.Compare(a.Name, b.Name) })
	}
	h.coreV2, h.apisV2 = h.aggregate()
	var err error
	if h.coreV2beta1, err = toV2beta1(h.coreV2); err != nil {
		return nil, err
	}
	if h.apisV2beta1, err = toV2beta1(h.apisV2); err != nil {
		return nil, err
	}
	return h, nil
}

// apiResources are the legacy discovery entries of r and its subresources.
func apiResources(r *resource.Resource) []metav1.APIResource {
	main := metav1.APIResource{
		Name: r.Name, SingularName: r.SingularName, Namespaced: r.Namespaced, Kind: r.Kind,
		Verbs: append(metav1.Verbs(nil), r.Verbs...), ShortNames: r.ShortNames, Categories: r.Categories,
	}
	out := []metav1.APIResource{main}
	for _, s := range subresources(r) {
		out = append(out, metav1.APIResource{
			Name: r.Name + "/" + s.name, Namespaced: r.Namespaced, Group: s.kind.Group, Version: s.kind.Version,
			Kind: s.kind.Kind, Verbs: s.verbs,
		})
	}
	return out
}

type subresource struct {
	name  string
	kind  schema.GroupVersionKind
	verbs []string
}

func subresources(r *resource.Resource) []subresource {
	var out []subresource
	gvk := r.GroupVersionKind()
	core := r.GroupVersion.Group == ""
	if core && r.Name == "pods" {
		out = append(out, subresource{"attach", schema.GroupVersionKind{Version: "v1", Kind: "PodAttachOptions"}, []string{"create", "get"}})
		out = append(out, subresource{"binding", schema.GroupVersionKind{Version: "v1", Kind: "Binding"}, []string{"create"}})
		if r.EphemeralContainers != nil {
			out = append(out, subresource{"ephemeralcontainers", gvk, []string{"get", "patch", "update"}})
		}
		out = append(out, subresource{"eviction", schema.GroupVersionKind{Group: "policy", Version: "v1", Kind: "Eviction"}, []string{"create"}})
		out = append(out, subresource{"exec", schema.GroupVersionKind{Version: "v1", Kind: "PodExecOptions"}, []string{"create", "get"}})
		out = append(out, subresource{"log", gvk, []string{"get"}})
		out = append(out, subresource{"portforward", schema.GroupVersionKind{Version: "v1", Kind: "PodPortForwardOptions"}, []string{"create", "get"}})
		out = append(out, subresource{"proxy", schema.GroupVersionKind{Version: "v1", Kind: "PodProxyOptions"}, []string{"create", "delete", "get", "patch", "update"}})
		if r.Resize != nil {
			out = append(out, subresource{"resize", gvk, []string{"get", "patch", "update"}})
		}
	}
	if core && r.Name == "nodes" {
		out = append(out, subresource{"proxy", schema.GroupVersionKind{Version: "v1", Kind: "NodeProxyOptions"}, []string{"create", "delete", "get", "patch", "update"}})
	}
	if core && r.Name == "services" {
		out = append(out, subresource{"proxy", schema.GroupVersionKind{Version: "v1", Kind: "ServiceProxyOptions"}, []string{"create", "delete", "get", "patch", "update"}})
	}
	if core && r.Name == "serviceaccounts" {
		out = append(out, subresource{"token", schema.GroupVersionKind{Group: "authentication.k8s.io", Version: "v1", Kind: "TokenRequest"}, []string{"create"}})
	}
	if core && r.Name == "namespaces" {
		out = append(out, subresource{"finalize", gvk, []string{"update"}})
	}
	if r.Scale != nil {
		out = append(out, subresource{"scale", schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}, []string{"get", "patch", "update"}})
	}
	if r.Approval != nil {
		out = append(out, subresource{"approval", gvk, []string{"get", "patch", "update"}})
	}
	if r.Status != nil {
		out = append(out, subresource{"status", gvk, []string{"get", "patch", "update"}})
	}
	return out
}

func (h *Handler) aggregate() (core, apis *apidiscoveryv2.APIGroupDiscoveryList) {
	core = &apidiscoveryv2.APIGroupDiscoveryList{}
	apis = &apidiscoveryv2.APIGroupDiscoveryList{}
	for _, g := range h.groups {
		gd := apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: g.name}}
		for _, v := range g.versions {
			gv := schema.GroupVersion{Group: g.name, Version: v}
			vd := apidiscoveryv2.APIVersionDiscovery{Version: v, Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent}
			for _, ar := range h.lists[gv].APIResources {
				if strings.Contains(ar.Name, "/") {
					continue
				}
				scope := apidiscoveryv2.ScopeCluster
				if ar.Namespaced {
					scope = apidiscoveryv2.ScopeNamespace
				}
				rd := apidiscoveryv2.APIResourceDiscovery{
					Resource: ar.Name, ResponseKind: &metav1.GroupVersionKind{Group: g.name, Version: v, Kind: ar.Kind},
					Scope: scope, SingularResource: ar.SingularName, Verbs: ar.Verbs,
					ShortNames: ar.ShortNames, Categories: ar.Categories,
				}
				for _, sub := range h.lists[gv].APIResources {
					name, ok := strings.CutPrefix(sub.Name, ar.Name+"/")
					if !ok {
						continue
					}
					rd.Subresources = append(rd.Subresources, apidiscoveryv2.APISubresourceDiscovery{
						Subresource: name, Verbs: sub.Verbs,
						ResponseKind: &metav1.GroupVersionKind{Group: orDefault(sub.Group, g.name), Version: orDefault(sub.Version, v), Kind: sub.Kind},
					})
				}
				vd.Resources = append(vd.Resources, rd)
			}
			gd.Versions = append(gd.Versions, vd)
		}
		if g.name == "" {
			core.Items = append(core.Items, gd)
		} else {
			apis.Items = append(apis.Items, gd)
		}
	}
	core.SetGroupVersionKind(apidiscoveryv2.SchemeGroupVersion.WithKind("APIGroupDiscoveryList"))
	apis.SetGroupVersionKind(apidiscoveryv2.SchemeGroupVersion.WithKind("APIGroupDiscoveryList"))
	return core, apis
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// toV2beta1 converts a v2 list to the structurally identical v2beta1.
func toV2beta1(in *apidiscoveryv2.APIGroupDiscoveryList) (*apidiscoveryv2beta1.APIGroupDiscoveryList, error) {
	data, err := json.Marshal(in)
	if err != nil {
		return nil, fmt.Errorf("encoding discovery: %w", err)
	}
	out := &apidiscoveryv2beta1.APIGroupDiscoveryList{}
	if err := json.Unmarshal(data, out); err != nil {
		return nil, fmt.Errorf("converting discovery to v2beta1: %w", err)
	}
	out.SetGroupVersionKind(apidiscoveryv2beta1.SchemeGroupVersion.WithKind("APIGroupDiscoveryList"))
	return out, nil
}

// ServeAPI serves /api.
func (h *Handler) ServeAPI(w http.ResponseWriter, r *http.Request) {
	h.serveRoot(w, r, true)
}

// ServeAPIs serves /apis.
func (h *Handler) ServeAPIs(w http.ResponseWriter, r *http.Request) {
	h.serveRoot(w, r, false)
}

func (h *Handler) serveRoot(w http.ResponseWriter, r *http.Request, core bool) {
	target, err := h.codecs.Negotiate(r, aggregated, false)
	if err != nil {
		h.writeErr(w, r, err)
		return
	}
	if target.As != "" {
		w.Header().Set("Vary", "Accept")
		var obj runtime.Object
		switch {
		case core && target.Version == "v2":
			obj = h.coreV2
		case core:
			obj = h.coreV2beta1
		case target.Version == "v2":
			obj = h.apisV2
		default:
			obj = h.apisV2beta1
		}
		write(w, r, target, obj)
		return
	}
	if core {
		v := &metav1.APIVersions{Versions: []string{"v1"}, ServerAddressByClientCIDRs: serverAddress(r)}
		v.Kind, v.APIVersion = "APIVersions", "v1"
		write(w, r, target, v)
		return
	}
	l := &metav1.APIGroupList{}
	l.Kind, l.APIVersion = "APIGroupList", "v1"
	for _, g := range h.groups {
		if g.name == "" {
			continue
		}
		l.Groups = append(l.Groups, h.apiGroup(g))
	}
	write(w, r, target, l)
}

func (h *Handler) apiGroup(g groupInfo) metav1.APIGroup {
	ag := metav1.APIGroup{Name: g.name}
	for _, v := range g.versions {
		ag.Versions = append(ag.Versions, metav1.GroupVersionForDiscovery{GroupVersion: g.name + "/" + v, Version: v})
	}
	ag.PreferredVersion = ag.Versions[0]
	return ag
}

// ServeGroup serves /apis/<group>; ok is false for an unknown group.
func (h *Handler) ServeGroup(w http.ResponseWriter, r *http.Request, group string) bool {
	for _, g := range h.groups {
		if g.name != group || g.name == "" {
			continue
		}
		target, err := h.codecs.Negotiate(r, nil, false)
		if err != nil {
			h.writeErr(w, r, err)
			return true
		}
		ag := h.apiGroup(g)
		ag.Kind, ag.APIVersion = "APIGroup", "v1"
		write(w, r, target, &ag)
		return true
	}
	return false
}

// ServeVersion serves /api/v1 or /apis/<group>/<version>; ok is false for an
// unknown group version.
func (h *Handler) ServeVersion(w http.ResponseWriter, r *http.Request, gv schema.GroupVersion) bool {
	l, ok := h.lists[gv]
	if !ok {
		return false
	}
	target, err := h.codecs.Negotiate(r, nil, false)
	if err != nil {
		h.writeErr(w, r, err)
		return true
	}
	out := *l
	out.Kind, out.APIVersion = "APIResourceList", "v1"
	write(w, r, target, &out)
	return true
}

func (h *Handler) writeErr(w http.ResponseWriter, r *http.Request, err error) {
	var na *codec.NotAcceptableError
	st := metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
		Code: http.StatusInternalServerError, Reason: metav1.StatusReasonInternalError, Message: err.Error()}
	if ok := asNotAcceptable(err, &na); ok {
		st.Code, st.Reason = http.StatusNotAcceptable, metav1.StatusReasonNotAcceptable
	}
	data, _ := json.Marshal(&st)
	w.Header().Set("Content-Type", codec.JSON)
	w.WriteHeader(int(st.Code))
	_, _ = w.Write(data)
}

// write answers obj, a discovery document, in target. Like every object
// kube-apiserver's discovery handlers answer (WriteObjectNegotiated), it
// is the audit's responseObject.
func write(w http.ResponseWriter, r *http.Request, target codec.Target, obj runtime.Object) {
	audit.LogResponseObject(r.Context())
	w.Header().Set("Content-Type", target.ContentType)
	w.WriteHeader(http.StatusOK)
	_ = target.Info.Serializer.Encode(obj, w)
}

// serverAddress is the address clients reached this server at, for
// APIVersions.serverAddressByClientCIDRs.
func serverAddress(r *http.Request) []metav1.ServerAddressByClientCIDR {
	host := r.Host
	if host == "" {
		return nil
	}
	if _, _, err := net.SplitHostPort(host); err != nil {
		host = net.JoinHostPort(host, "443")
	}
	return []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: host}}
}
