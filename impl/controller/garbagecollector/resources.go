package garbagecollector

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

// Resource is one served resource the garbage collector watches.
type Resource struct {
	GVR        schema.GroupVersionResource
	Kind       string
	Namespaced bool
}

// FallbackResources is what the collector watches when discovery fails: the
// built-in resources of the pod-creation pipeline.
var FallbackResources = []Resource{
	{schema.GroupVersionResource{Version: "v1", Resource: "pods"}, "Pod", true},
	{schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, "ConfigMap", true},
	{schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, "Secret", true},
	{schema.GroupVersionResource{Version: "v1", Resource: "services"}, "Service", true},
	{schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}, "ServiceAccount", true},
	{schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"}, "PersistentVolumeClaim", true},
	{schema.GroupVersionResource{Version: "v1", Resource: "nodes"}, "Node", false},
	{schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, "Namespace", false},
	{schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, "Deployment", true},
	{schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}, "ReplicaSet", true},
	{schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"}, "StatefulSet", true},
	{schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "daemonsets"}, "DaemonSet", true},
	{schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "controllerrevisions"}, "ControllerRevision", true},
	{schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}, "Job", true},
	{schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}, "Lease", true},
}

// ignored resources are never graph nodes (upstream ignores events).
var ignored = map[schema.GroupResource]bool{
	{Group: "", Resource: "events"}:              true,
	{Group: "events.k8s.io", Resource: "events"}: true,
}

// DeletableResources asks discovery for every preferred-version resource
// that supports list, watch and delete. A partial discovery failure still
// returns what was discovered.
func DeletableResources(dc discovery.DiscoveryInterface) ([]Resource, error) {
	lists, err := discovery.ServerPreferredResources(dc)
	if len(lists) == 0 && err != nil {
		return nil, fmt.Errorf("discovering resources: %w", err)
	}
	var out []Resource
	for _, list := range lists {
		gv, perr := schema.ParseGroupVersion(list.GroupVersion)
		if perr != nil {
			continue
		}
		for _, r := range list.APIResources {
			if strings.Contains(r.Name, "/") || ignored[schema.GroupResource{Group: gv.Group, Resource: r.Name}] {
				continue
			}
			verbs := map[string]bool{}
			for _, v := range r.Verbs {
				verbs[v] = true
			}
			if !verbs["list"] || !verbs["watch"] || !verbs["delete"] {
				continue
			}
			out = append(out, Resource{GVR: gv.WithResource(r.Name), Kind: r.Kind, Namespaced: r.Namespaced})
		}
	}
	return out, nil
}

// mapping finds the resource of an owner reference's apiVersion and kind.
type mapping map[schema.GroupKind]Resource

func newMapping(rs []Resource) mapping {
	m := mapping{}
	for _, r := range rs {
		m[schema.GroupKind{Group: r.GVR.Group, Kind: r.Kind}] = r
	}
	return m
}

func (m mapping) lookup(apiVersion, kind string) (Resource, bool) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return Resource{}, false
	}
	r, ok := m[schema.GroupKind{Group: gv.Group, Kind: kind}]
	return r, ok
}
