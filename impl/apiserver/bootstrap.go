package apiserver

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeproof/kubeproof/impl/apiserver/endpoints"
)

// Objects a resource's storage creates at start (resource.Bootstrap): the
// system PriorityClasses, which kube-apiserver's
// scheduling/bootstrap-system-priority-classes post-start hook creates
// through its loopback client. Each object is read, and a missing one
// created, by the server's in-process loopback client
// (loopback_inprocess.go: the full handler, so audited, admitted,
// validated, and recorded in managedFields under kube-apiserver); one
// that exists is left as it is. A read failing is retried, as is a create
// the server answers 503; any other refused create fails the hook, and so
// the start, as the hook failing stops kube-apiserver. The hook retries
// every bootstrapRetryInterval until bootstrapTimeout, which also bounds
// the reads and writes themselves: a store or an admission webhook that
// does not answer fails the start then rather than holding it forever, as
// kube-apiserver's loopback requests end at its request timeout.
const (
	bootstrapRetryInterval = time.Second
	bootstrapTimeout       = 30 * time.Second
)

// bootstrapHook is one resource's Bootstrap as a post-start hook.
type bootstrapHook struct {
	name    string
	handler *endpoints.Handler
	objects func() []runtime.Object
	// timeout replaces bootstrapTimeout when not zero (tests).
	timeout time.Duration
}

// bootstrapHooks lists the served resources' Bootstrap hooks in the
// order of Config.Resources.
func (s *Server) bootstrapHooks() []bootstrapHook {
	var out []bootstrapHook
	for _, r := range s.cfg.Resources {
		if r.Bootstrap == nil {
			continue
		}
		h, ok := s.handlers[r.GroupVersionResource()]
		if !ok {
			continue
		}
		out = append(out, bootstrapHook{name: r.Bootstrap.Hook, handler: h, objects: r.Bootstrap.Objects})
	}
	return out
}

// bootstrapStep is what one attempt decided: done, retry later (with the
// cause), or fail.
type bootstrapStep int

const (
	bootstrapDone bootstrapStep = iota
	bootstrapRetry
	bootstrapFail
)

// bootstrapDecision is the pure decision on one object's read and create
// errors (createErr is read only when the read found nothing): a read
// that failed otherwise than NotFound is retried; a create that succeeded
// or lost to another server's is done; a 503 is retried, anything else
// fails.
func bootstrapDecision(getErr, createErr error) bootstrapStep {
	switch {
	case getErr == nil:
		return bootstrapDone
	case !apierrors.IsNotFound(getErr):
		return bootstrapRetry
	case createErr == nil || apierrors.IsAlreadyExists(createErr):
		return bootstrapDone
	case apierrors.IsServiceUnavailable(createErr):
		return bootstrapRetry
	}
	return bootstrapFail
}

// runBootstrap makes one attempt after another until every object of b
// exists, an attempt fails, or bootstrapTimeout has passed; ctx ending
// stops it too.
func (s *Server) runBootstrap(ctx context.Context, b bootstrapHook) error {
	timeout := b.timeout
	if timeout == 0 {
		timeout = bootstrapTimeout
	}
	deadline := time.Now().Add(timeout)
	// Every attempt's reads and writes end at the deadline too: one that
	// hangs must not hold the start past it.
	attemptCtx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	for {
		done, err := s.bootstrapOnce(attemptCtx, b)
		if done {
			// Debug: a normal start says nothing (the project's logs are
			// quiet by default); failures are warned of or end Run.
			s.log.Debug("all objects of the post-start hook are created or already exist", "hook", b.name)
			return nil
		}
		if ctx.Err() == nil && attemptCtx.Err() != nil {
			return fmt.Errorf("apiserver: post-start hook %s: gave up after %v: %w", b.name, timeout, err)
		}
		if !errors.Is(err, errBootstrapRetry) {
			return fmt.Errorf("apiserver: post-start hook %s: %w", b.name, err)
		}
		if time.Now().Add(bootstrapRetryInterval).After(deadline) {
			return fmt.Errorf("apiserver: post-start hook %s: gave up after %v: %w", b.name, timeout, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("apiserver: post-start hook %s: %w", b.name, ctx.Err())
		case <-time.After(bootstrapRetryInterval):
		}
	}
}

// errBootstrapRetry marks an attempt to be made again.
var errBootstrapRetry = errors.New("will retry")

// bootstrapOnce reads each object and creates the missing ones, through
// the loopback client as kube-apiserver's hook (audited; managedFields
// under kube-apiserver); it stops at the first object to retry (err wraps
// errBootstrapRetry) or failing.
func (s *Server) bootstrapOnce(ctx context.Context, b bootstrapHook) (done bool, err error) {
	res := b.handler.Resource()
	gvr := res.GroupVersionResource()
	for _, obj := range b.objects() {
		m, err := meta.Accessor(obj)
		if err != nil {
			return false, fmt.Errorf("bootstrap object %T: %w", obj, err)
		}
		name := m.GetName()
		client := s.self.dynamic.Resource(gvr).Namespace(m.GetNamespace())
		_, getErr := client.Get(ctx, name, metav1.GetOptions{})
		var createErr error
		if apierrors.IsNotFound(getErr) {
			var u *unstructured.Unstructured
			if u, createErr = s.toUnstructured(obj, res.GroupVersion); createErr != nil {
				return false, fmt.Errorf("bootstrap %s %q: %w", res.Name, name, createErr)
			}
			_, createErr = client.Create(ctx, u, metav1.CreateOptions{})
		}
		switch bootstrapDecision(getErr, createErr) {
		case bootstrapDone:
			if getErr != nil {
				s.log.Debug("created bootstrap object", "hook", b.name, "resource", res.Name, "name", name)
			}
		case bootstrapRetry:
			cause := getErr
			if cause == nil || apierrors.IsNotFound(getErr) {
				cause = createErr
			}
			s.log.Warn("bootstrap object not ready, retrying", "hook", b.name, "name", name, "err", cause)
			return false, fmt.Errorf("%s %q: %w: %w", res.Name, name, errBootstrapRetry, cause)
		case bootstrapFail:
			return false, fmt.Errorf("creating %s %q: %w", res.Name, name, createErr)
		}
	}
	return true, nil
}

// toUnstructured is obj as the dynamic client sends it: its fields, and
// the apiVersion and kind of gv the scheme gives its type.
func (s *Server) toUnstructured(obj runtime.Object, gv schema.GroupVersion) (*unstructured.Unstructured, error) {
	kinds, _, err := s.codecs.Scheme.ObjectKinds(obj)
	if err != nil {
		return nil, fmt.Errorf("finding the kind of %T: %w", obj, err)
	}
	fields, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("converting %T: %w", obj, err)
	}
	u := &unstructured.Unstructured{Object: fields}
	u.SetGroupVersionKind(gv.WithKind(kinds[0].Kind))
	return u, nil
}
