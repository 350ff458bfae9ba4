// Package admission is the API server's admission chain: plugins that may
// change (mutating) and then accept or reject (validating) each create,
// update and delete after the object is decoded and before it is written.
//
// The plugins, one file each, are kube-apiserver's of the same names:
// NamespaceLifecycle, LimitRanger, ServiceAccount, NodeRestriction,
// AlwaysPullImages, PodSecurity, Priority, DefaultTolerationSeconds,
// RuntimeClass, CertificateApproval, CertificateSigning,
// CertificateSubjectRestriction (certificates.go), PodTopologyLabels,
// PodResizeValidator, MutatingAdmissionWebhook, ValidatingAdmissionWebhook
// and ResourceQuota.
// Each is a small type whose decision is a pure function of the request and
// the objects it reads; storage access sits behind a small function or
// interface field, so tests give them fixed objects.
//
// Registry (plugins.go, the one place plugins are listed, in the order
// they run):
//
//	// names from --enable-admission-plugins / --disable-admission-plugins:
//	names, err := admission.EnabledPlugins(enable, disable)
//	// build them on the API server's stores (*apiserver.Server is a StoreGetter):
//	mutators, validators, starters, err := admission.NewPlugins(names, stores)
//	// or with flags/configuration (toleration seconds, PodSecurity defaults
//	// and exemptions, the API server's authorizer for NodeRestriction):
//	mutators, validators, starters, err := admission.NewPluginsWithOptions(names, stores, admission.Options{...})
//
// AllPlugins and DefaultPlugins list the known and the default-enabled
// names (kube-apiserver's default set: everything here but NodeRestriction
// and AlwaysPullImages). starters are the plugins' watch-fed caches (one per
// resource they read: namespaces, service accounts, limit ranges, quotas,
// priority classes, runtime classes, nodes, webhook configurations); run each
// with the server's lifetime context (they return when it ends). Until a
// cache has synced, reads go to the store; a miss that matters (a service
// account, a namespace, a RuntimeClass) is confirmed with a quorum read.
// NewPlugins' NamespaceLifecycle can replace the server's built-in one
// (Config.DisableNamespaceLifecycle).
//
// Warnings (PodSecurity's warn level, webhook response warnings) are
// collected per request: the endpoint serving it gives the request context
// a collector (request.CollectWarnings; request.WithWarnings makes one)
// and sends Warnings.List() as Warning headers.
//
// Webhooks are called at clientConfig.url, or at a clientConfig.service
// resolved to its ClusterIP (or, with Options.EnableAggregatorRouting, one
// of its ready endpoints; webhook_service.go), default/kubernetes:443
// being the API server itself when the StoreGetter is also a
// LoopbackGetter (the API server). Under matchPolicy
// Equivalent a webhook is also called for an equivalent resource its
// rules name, with the object converted, when the StoreGetter is also an
// EquivalentResourceMapper (the API server; webhook_equivalent.go); CEL
// matchConditions are refused by validation. A mutating webhook's patched
// object is defaulted again when the StoreGetter is also an
// ObjectDefaulter (the API server), as kube-apiserver does.
package admission

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// Operation is the kind of write being admitted.
type Operation string

const (
	Create  Operation = "CREATE"
	Update  Operation = "UPDATE"
	Delete  Operation = "DELETE"
	Connect Operation = "CONNECT"
)

// Attributes describe one write.
type Attributes struct {
	Operation   Operation
	Resource    schema.GroupVersionResource
	Kind        schema.GroupVersionKind
	Subresource string
	Namespace   string
	Name        string
	// Object is the new object (nil for delete); OldObject the stored one
	// (nil for create).
	Object    runtime.Object
	OldObject runtime.Object
	DryRun    bool
	User      *request.User
	// Options are the request's options, which webhooks receive as
	// request.options (see RequestOptions).
	Options RequestOptions
	// reinvocation is the state of the mutating rounds, made by the
	// MutatingWebhook plugin once it calls a webhook (nil until then, so
	// that admitting allocates nothing more without webhooks).
	reinvocation *reinvocation
}

// RequestOptions are the options of the request a write comes from, as
// kube-apiserver's handlers hand them to admission (its attributes'
// operation options) and its webhooks receive them in request.options: a
// create's CreateOptions, an update's UpdateOptions and a delete's
// DeleteOptions. A patch's options become UpdateOptions, or CreateOptions
// when the patch (an apply) creates the object, keeping only dryRun,
// fieldManager and fieldValidation, as a PUT creating its object has its
// UpdateOptions become CreateOptions: those three fields are what
// DryRun, FieldManager and FieldValidation hold, as the request's query
// sent them (every dryRun value, the first of the others, nothing
// defaulted). Delete is a delete's or deletecollection's DeleteOptions as
// the handler decoded them (body, else query), after the changes
// kube-apiserver's store makes before it admits the delete of one object
// (a negative grace period is 1 second; a graceful kind's grace period is
// filled in). The zero value, for writes made inside the server, is the
// options of a request that gave none (dryRun from Attributes.DryRun).
type RequestOptions struct {
	DryRun                        []string
	FieldManager, FieldValidation string
	Delete                        *metav1.DeleteOptions
}

// reinvocation is kube-apiserver's reinvocation context: the mutating
// plugins run once, and once more when a mutating webhook changed the
// object (every in-tree plugin again, then the webhooks due a second
// call: MutatingWebhook.Admit).
type reinvocation struct {
	// again: a webhook changed the object, the chain runs its mutating
	// plugins a second time; second: this is that second run.
	again, second bool
	// The MutatingWebhook plugin's state: invoked, the webhooks with
	// reinvocationPolicy IfNeeded called (by index) and not yet due;
	// due, those to call in the second run; last, the object as the
	// plugin left it (an in-tree plugin changing it in the second run
	// makes every invoked webhook due).
	invoked, due map[int]bool
	last         runtime.Object
}

// roundMutator is a Mutator that takes part in the chain's reinvocation
// rounds (MutatingWebhook): the chain runs one round of it at a time,
// where its Admit, called alone, runs both.
type roundMutator interface {
	Mutator
	admitRound(ctx context.Context, a *Attributes) error
}

// Mutator may change a.Object.
type Mutator interface {
	Admit(ctx context.Context, a *Attributes) error
}

// Validator accepts or rejects a write; it must not change the object.
type Validator interface {
	Validate(ctx context.Context, a *Attributes) error
}

// Chain runs every mutator in order, then every validator in order; the
// first error stops it and is returned to the client. As kube-apiserver's
// reinvoker, the mutators run a second time when a mutating webhook
// changed the object (in-tree plugins are idempotent; MutatingWebhook
// calls only the webhooks due a reinvocation).
type Chain struct {
	Mutators   []Mutator
	Validators []Validator
}

// Admit runs the mutating plugins.
func (c *Chain) Admit(ctx context.Context, a *Attributes) error {
	if c == nil {
		return nil
	}
	a.reinvocation = nil
	err := c.admitRound(ctx, a)
	if err == nil && a.reinvocation != nil && a.reinvocation.again {
		a.reinvocation.second = true
		err = c.admitRound(ctx, a)
	}
	a.reinvocation = nil
	return err
}

// admitRound runs every mutating plugin once (MutatingWebhook one round;
// its Admit alone runs both).
func (c *Chain) admitRound(ctx context.Context, a *Attributes) error {
	for _, m := range c.Mutators {
		var err error
		if r, ok := m.(roundMutator); ok {
			err = r.admitRound(ctx, a)
		} else {
			err = m.Admit(ctx, a)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Validate runs the validating plugins.
func (c *Chain) Validate(ctx context.Context, a *Attributes) error {
	if c == nil {
		return nil
	}
	for _, v := range c.Validators {
		if err := v.Validate(ctx, a); err != nil {
			return err
		}
	}
	return nil
}
