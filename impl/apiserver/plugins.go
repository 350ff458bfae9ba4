package apiserver

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/kubeproof/kubeproof/impl/apiserver/admission"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth/rbac/escalation"
	"github.com/kubeproof/kubeproof/impl/apiserver/resource"
	"github.com/kubeproof/kubeproof/impl/storage"
)

// StoreGetter gives plugins the server's own stores, as kube-apiserver's
// admission plugins and authorizers get informers over its storage. *Server
// implements it; plugin packages declare the same method set as a small
// interface of their own and never import this package.
//
// Keys follow package storage: ObjectKey and ListKey build them, so a
// plugin never assumes a resource's prefix.
type StoreGetter interface {
	// Store is the storage of a served resource (its storage version).
	Store(gr schema.GroupResource) (storage.Interface, bool)
	// ObjectKey is the key of one object ("" namespace for cluster-scoped
	// resources).
	ObjectKey(gr schema.GroupResource, namespace, name string) string
	// ListKey is the key prefix of a list or watch: one namespace, or all
	// of them when namespace is "".
	ListKey(gr schema.GroupResource, namespace string) string
}

// Plugins are the parts of the request chain built once the stores exist
// (Config.Plugins returns them): authorizers and admission plugins that
// read the server's own objects, and the background loops (caches,
// bootstrap writers) they need.
type Plugins struct {
	// Authorizer, when set, replaces Config.Authorizer. Build the
	// --authorization-mode union with auth.AuthorizerUnion.
	Authorizer auth.Authorizer
	// RBACRules, when set (RBAC authorization is on), resolves the rules a
	// user holds for the RBAC kinds' escalation check: a user may write a
	// role, or bind one, only with rules they hold (unless in
	// system:masters, or allowed to escalate or bind). Unset, a writer
	// holds no rules there and needs the escalate or bind verb.
	RBACRules escalation.RuleResolver
	// Authenticators are tried after Config.Authenticator (the x509
	// authenticator by default), in order; the first that recognises a
	// request wins.
	Authenticators []auth.Authenticator
	// Mutators run after the built-in NamespaceLifecycle and
	// Config.AdmissionMutators; Validators after Config.AdmissionValidators.
	Mutators   []admission.Mutator
	Validators []admission.Validator
	// Starters are run by Server.Run, each in its own goroutine, with a
	// context that ends when Run is shutting down; Run waits for every
	// one to return before it returns. They start after the system
	// namespaces exist and before the server serves requests.
	Starters []func(ctx context.Context)
	// WaitReady are called by Run, in order, after the Starters have
	// started and before it serves requests (caches synced, bootstrap
	// policy written): the server answers no request its plugins are not
	// ready for. Each must return when ctx ends; an error stops Run.
	WaitReady []func(ctx context.Context) error
	// PostStartHooks are run by Run, in order, after the Starters have
	// started and before the WaitReady functions. Each is one of
	// kube-apiserver's post-start hooks (rbac/bootstrap-roles): the health
	// endpoints list it as "poststarthook/<Name>", failing until its Run
	// returned nil. An error stops Run.
	PostStartHooks []PostStartHook
}

// PostStartHook is a named piece of start-up work of a plugin; see
// Plugins.PostStartHooks.
type PostStartHook struct {
	Name string
	Run  func(ctx context.Context, hc PostStartHookContext) error
}

// PostStartHookContext is what a post-start hook is given, as
// kube-apiserver's hooks are: LoopbackClientConfig is the configuration
// of the server's loopback client (in process: its requests are served by
// the server's full handler, as system:apiserver in system:masters, with
// kube-apiserver's loopback user agent; each call gets a copy), for the
// hook's writes to be authenticated, authorized, admitted, audited and
// recorded in managedFields as kube-apiserver's hooks' are.
type PostStartHookContext struct {
	LoopbackClientConfig *rest.Config
}

// PluginsFunc builds the Plugins from the server's stores; Config.Plugins.
type PluginsFunc func(stores StoreGetter) (Plugins, error)

// storeEntry is one resource's own storage.
type storeEntry struct {
	store  storage.Interface
	res    *resource.Resource
	prefix string
}

// Store implements StoreGetter.
func (s *Server) Store(gr schema.GroupResource) (storage.Interface, bool) {
	e, ok := s.stores[gr]
	if !ok {
		return nil, false
	}
	return e.store, true
}

// ObjectKey implements StoreGetter.
func (s *Server) ObjectKey(gr schema.GroupResource, namespace, name string) string {
	e, ok := s.stores[gr]
	if !ok {
		return ""
	}
	if !e.res.Namespaced || namespace == "" {
		return e.prefix + "/" + name
	}
	return e.prefix + "/" + namespace + "/" + name
}

// DefaultObject fills the unset fields of obj, an object of kind gvk, with
// the defaults of the served resource of that kind, as kube-apiserver's
// scheme defaulter does; an object of a kind no resource serves (a
// subresource's Scale or Eviction) is left alone, as kube-apiserver's
// scheme has no defaults for autoscaling/v1 Scale or policy/v1 Eviction. MutatingAdmissionWebhook
// calls it on the object a webhook patched (admission.ObjectDefaulter).
func (s *Server) DefaultObject(gvk schema.GroupVersionKind, obj runtime.Object) {
	for _, e := range s.stores {
		if e.res.GroupVersionKind() == gvk && e.res.Strategy != nil {
			e.res.Strategy.Default(obj)
			return
		}
	}
}

// storageOf is the resource whose storage holds r's objects: r's own, or
// the one it shares (events.k8s.io/v1 events are core/v1 events).
func storageOf(r *resource.Resource) schema.GroupVersionResource {
	if r.SharedStorage != nil {
		return r.SharedStorage.Of
	}
	return r.GroupVersionResource()
}

// EquivalentResources lists the other served resources whose objects are
// gvr's in another group or version: those sharing its storage, as
// kube-apiserver's equivalent resource registry keys resources by storage
// prefix (core/v1 and events.k8s.io/v1 events). Subresources have none.
// In group, version, resource order; MutatingAdmissionWebhook and
// ValidatingAdmissionWebhook use it for matchPolicy Equivalent
// (admission.EquivalentResourceMapper).
func (s *Server) EquivalentResources(gvr schema.GroupVersionResource, subresource string) []admission.EquivalentResource {
	r, ok := s.served[gvr]
	if !ok || subresource != "" {
		return nil
	}
	key := storageOf(r)
	var out []admission.EquivalentResource
	for other, o := range s.served {
		if other != gvr && storageOf(o) == key {
			out = append(out, admission.EquivalentResource{Resource: other, Kind: o.GroupVersionKind()})
		}
	}
	slices.SortFunc(out, func(a, b admission.EquivalentResource) int {
		return cmp.Or(cmp.Compare(a.Resource.Group, b.Resource.Group), cmp.Compare(a.Resource.Version, b.Resource.Version),
			cmp.Compare(a.Resource.Resource, b.Resource.Resource))
	})
	return out
}

// ConvertObject converts obj, an object of the served resource from, to
// the kind of the equivalent resource to (through their shared storage's
// kind). The result is a new object.
func (s *Server) ConvertObject(obj runtime.Object, from, to schema.GroupVersionResource) (runtime.Object, error) {
	fr, ok := s.served[from]
	if !ok {
		return nil, fmt.Errorf("converting to %s: %s is not served", to, from)
	}
	tr, ok := s.served[to]
	if !ok {
		return nil, fmt.Errorf("converting from %s: %s is not served", from, to)
	}
	if storageOf(fr) != storageOf(tr) {
		return nil, fmt.Errorf("%s and %s are not equivalent resources", from, to)
	}
	stored := obj.DeepCopyObject()
	var err error
	if fr.SharedStorage != nil {
		if stored, err = fr.SharedStorage.ToStorage(stored); err != nil {
			return nil, fmt.Errorf("converting %s to %s: %w", from, to, err)
		}
	}
	out := stored
	if tr.SharedStorage != nil {
		if out, err = tr.SharedStorage.FromStorage(stored); err != nil {
			return nil, fmt.Errorf("converting %s to %s: %w", from, to, err)
		}
	}
	out.GetObjectKind().SetGroupVersionKind(tr.GroupVersionKind())
	return out, nil
}

// convertFrom converts obj, of kind from, to the kind of the served
// resource to when a served resource of kind from shares to's storage
// (endpoints.Options.ConvertFrom); ok is false when none does.
func (s *Server) convertFrom(obj runtime.Object, from schema.GroupVersionKind, to schema.GroupVersionResource) (runtime.Object, bool, error) {
	for _, eq := range s.EquivalentResources(to, "") {
		if eq.Kind == from {
			out, err := s.ConvertObject(obj, eq.Resource, to)
			return out, true, err
		}
	}
	return nil, false, nil
}

// ListKey implements StoreGetter.
func (s *Server) ListKey(gr schema.GroupResource, namespace string) string {
	e, ok := s.stores[gr]
	if !ok {
		return ""
	}
	if e.res.Namespaced && namespace != "" {
		return e.prefix + "/" + namespace + "/"
	}
	return e.prefix + "/"
}
