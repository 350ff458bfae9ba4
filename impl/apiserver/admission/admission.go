// Package admission is the API server's admission chain: plugins that may
// change (mutating) and then accept or reject (validating) each create,
// update and delete after the object is decoded and before it is written.
package admission

import (
	"context"

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
// first error stops it and is returned to the client.
type Chain struct {
	Mutators   []Mutator
	Validators []Validator
}

// Admit runs the mutating plugins.
func (c *Chain) Admit(ctx context.Context, a *Attributes) error {
	if c == nil {
		return nil
	}
	for _, m := range c.Mutators {
		if err := m.Admit(ctx, a); err != nil {
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
