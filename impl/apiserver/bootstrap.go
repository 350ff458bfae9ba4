package apiserver

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubeproof/kubeproof/impl/apiserver/endpoints"
	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// Objects a resource's storage creates at start (resource.Bootstrap): the
// system PriorityClasses, which kube-apiserver's
// scheduling/bootstrap-system-priority-classes post-start hook creates
// through its loopback client. Each object is read; a missing one is
// created through the create path (defaults, admission, validation), one
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
	// As the loopback client: the server's own identity for admission.
	ctx = request.WithUser(ctx, s.loopback.user)
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

// loopbackManager is the field manager kube-apiserver's loopback client's
// creates are recorded under (its user agent's product).
const loopbackManager = "kube-apiserver"

// errBootstrapRetry marks an attempt to be made again.
var errBootstrapRetry = errors.New("will retry")

// bootstrapOnce reads each object and creates the missing ones; it stops
// at the first object to retry (err wraps errBootstrapRetry) or failing.
func (s *Server) bootstrapOnce(ctx context.Context, b bootstrapHook) (done bool, err error) {
	for _, obj := range b.objects() {
		m, err := meta.Accessor(obj)
		if err != nil {
			return false, fmt.Errorf("bootstrap object %T: %w", obj, err)
		}
		name := m.GetName()
		_, getErr := b.handler.GetObject(ctx, m.GetNamespace(), name)
		var createErr error
		if apierrors.IsNotFound(getErr) {
			info := &request.Info{IsResourceRequest: true, Verb: "create", APIGroup: b.handler.Resource().GroupVersion.Group,
				APIVersion: b.handler.Resource().GroupVersion.Version, Resource: b.handler.Resource().Name, Namespace: m.GetNamespace()}
			_, createErr = b.handler.CreateObjectManaged(ctx, info, obj, loopbackManager)
		}
		switch bootstrapDecision(getErr, createErr) {
		case bootstrapDone:
			if getErr != nil {
				s.log.Debug("created bootstrap object", "hook", b.name, "resource", b.handler.Resource().Name, "name", name)
			}
		case bootstrapRetry:
			cause := getErr
			if cause == nil || apierrors.IsNotFound(getErr) {
				cause = createErr
			}
			s.log.Warn("bootstrap object not ready, retrying", "hook", b.name, "name", name, "err", cause)
			return false, fmt.Errorf("%s %q: %w: %w", b.handler.Resource().Name, name, errBootstrapRetry, cause)
		case bootstrapFail:
			return false, fmt.Errorf("creating %s %q: %w", b.handler.Resource().Name, name, createErr)
		}
	}
	return true, nil
}
