package eviction

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	policyv1beta1 "k8s.io/api/policy/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeproof/kubeproof/impl/apiserver/audit"
	"github.com/kubeproof/kubeproof/impl/apiserver/codec"
	"github.com/kubeproof/kubeproof/impl/apiserver/endpoints"
	"github.com/kubeproof/kubeproof/impl/apiserver/request"
	"github.com/kubeproof/kubeproof/impl/storage"
)

var (
	podsGR   = corev1.Resource("pods")
	budgetGR = policyv1.Resource("poddisruptionbudgets")
	evictGR  = schema.GroupResource{Resource: "pods/eviction"}

	evictionGVK = policyv1.SchemeGroupVersion.WithKind("Eviction")
)

// Stores is the part of the API server's StoreGetter the subresource
// uses (the server's own storage of poddisruptionbudgets).
type Stores interface {
	Store(gr schema.GroupResource) (storage.Interface, bool)
	ObjectKey(gr schema.GroupResource, namespace, name string) string
	ListKey(gr schema.GroupResource, namespace string) string
}

// Handler serves pods/eviction inside the API server.
type Handler struct {
	codecs  *codec.Codecs
	pods    *endpoints.Handler
	evictor *Evictor
	// maxBody bounds the request body.
	maxBody int64
}

// NewHandler builds the subresource over the server's pods handler (its
// admission chain admits the eviction's create, as kube-apiserver's create
// handler; its deletes are DELETE's without admission, as kube-apiserver's
// eviction REST deletes: graceful deletion, preconditions) and its budget
// store. It is nil (serving nothing) when the server serves no pods.
func NewHandler(codecs *codec.Codecs, stores Stores, pods *endpoints.Handler, maxBody int64) *Handler {
	if pods == nil {
		return nil
	}
	return &Handler{codecs: codecs, pods: pods, maxBody: maxBody, evictor: &Evictor{
		Pods:    serverPods{stores: stores, h: pods},
		Budgets: serverBudgets{stores: stores},
	}}
}

// Serve serves the request if it addresses pods/<name>/eviction, and
// reports whether it did.
func (h *Handler) Serve(w http.ResponseWriter, r *http.Request, gv schema.GroupVersion, info *request.Info) bool {
	// Outside a namespace kube-apiserver has no route for a pod's
	// subresources: the pods handler answers its router's 404.
	if h == nil || gv != corev1.SchemeGroupVersion || info.Resource != "pods" || info.Subresource != "eviction" || len(info.Parts) != 3 ||
		!info.UnderNamespace {
		return false
	}
	if info.Verb != "create" {
		// No route serves another method: the router's 405.
		endpoints.WriteStatusError(w, r, h.codecs, endpoints.MethodNotAllowed())
		return true
	}
	if info.Name == "" {
		// pods//eviction: the route's handler reads the name first.
		endpoints.WriteError(w, r, h.codecs, endpoints.NameRequired(), evictGR, info.Name)
		return true
	}
	// The answer's media type is negotiated before anything is done, as
	// kube-apiserver's create handler does: an Accept the server cannot
	// answer is a 406 that evicts nothing.
	target, err := h.codecs.Negotiate(r, nil, false)
	if err != nil {
		endpoints.WriteError(w, r, h.codecs, err, evictGR, info.Name)
		return true
	}
	// Warnings (the admission chain's, the body's unknown fields) go out
	// with the answer, as any create's.
	w, r = endpoints.CollectWarnings(w, r)
	// The create's options (?dryRun, ?fieldValidation, ?fieldManager)
	// are checked before the body is read.
	opts, fieldValidation, err := endpoints.CreateOptions(r)
	if err != nil {
		endpoints.WriteError(w, r, h.codecs, err, evictGR, info.Name)
		return true
	}
	ev := &policyv1.Eviction{}
	decoded, bodyGV, err := h.read(w, r, ev, fieldValidation)
	if err != nil {
		endpoints.WriteError(w, r, h.codecs, err, evictGR, info.Name)
		return true
	}
	// Recorded in the body's group version, as kube-apiserver's create
	// handler records what it decoded.
	audit.LogRequestObject(r.Context(), ev, h.codecs.RequestObjectJSON(decoded, bodyGV, nil))
	// Admitted as a create of pods/eviction (a dry run as its ?dryRun
	// says) before anything is read or written, as kube-apiserver's; the
	// name check between the phases is where its eviction REST makes it,
	// and then the create's dryRun becomes the delete's.
	err = h.pods.AdmitCreate(r.Context(), info, evictionGVK, ev, opts, func() error { return checkName(info.Name, ev) })
	if err == nil {
		err = propagateDryRun(ev, opts.DryRun)
	}
	if err != nil {
		endpoints.WriteError(w, r, h.codecs, err, podsGR, info.Name)
		return true
	}
	status, err := h.evictor.Evict(r.Context(), info.Namespace, info.Name, ev)
	if err != nil {
		endpoints.WriteError(w, r, h.codecs, err, podsGR, info.Name)
		return true
	}
	h.write(w, r, target, http.StatusCreated, status)
	return true
}

// propagateDryRun makes the create's dryRun the eviction's delete's, as
// kube-apiserver's eviction REST does: given where the Eviction's
// DeleteOptions have none, and one equal to theirs where they have one. A
// different one is refused with 400 (kube-apiserver: 500, "Non-matching
// dry-run options in request and content"; bad input is never a 5xx here).
func propagateDryRun(ev *policyv1.Eviction, dryRun []string) error {
	switch {
	case len(dryRun) == 0:
	case ev.DeleteOptions == nil:
		ev.DeleteOptions = &metav1.DeleteOptions{DryRun: dryRun}
	case len(ev.DeleteOptions.DryRun) == 0:
		ev.DeleteOptions.DryRun = dryRun
	case !slices.Equal(ev.DeleteOptions.DryRun, dryRun):
		return apierrors.NewBadRequest(fmt.Sprintf("Non-matching dry-run options in request and content: %v and %v", dryRun, ev.DeleteOptions.DryRun))
	}
	return nil
}

// read decodes an Eviction body (errors are 400/413/415) under the
// fieldValidation directive: unknown or duplicate fields are a 400 under
// Strict, warnings under Warn, ignored under Ignore. As kube-apiserver's
// eviction, a policy/v1beta1 Eviction is accepted as well as a policy/v1
// one (both have the same fields, copied into into); it returns the object
// the body decoded to (into, or the policy/v1beta1 Eviction) and the body's
// group version, which the audit event records. A body that does not
// decode into an Eviction is refused in the create handler's words
// (endpoints.DecodeError).
func (h *Handler) read(w http.ResponseWriter, r *http.Request, into *policyv1.Eviction, fieldValidation string) (runtime.Object, schema.GroupVersion, error) {
	if h.maxBody > 0 && r.ContentLength > h.maxBody {
		return nil, schema.GroupVersion{}, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", h.maxBody))
	}
	body := r.Body
	if h.maxBody > 0 {
		body = http.MaxBytesReader(w, r.Body, h.maxBody)
	}
	data, err := io.ReadAll(body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, schema.GroupVersion{}, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", h.maxBody))
		}
		return nil, schema.GroupVersion{}, apierrors.NewBadRequest(fmt.Sprintf("reading request body: %v", err))
	}
	info, err := h.codecs.RequestSerializer(r.Header.Get("Content-Type"))
	if err != nil {
		return nil, schema.GroupVersion{}, err
	}
	dec := info.Serializer
	if fieldValidation != metav1.FieldValidationIgnore && info.StrictSerializer != nil {
		dec = info.StrictSerializer
	}
	want := policyv1.SchemeGroupVersion.WithKind("Eviction")
	obj, gvk, warnings, err := endpoints.DecodeBody(dec, data, want, into, fieldValidation)
	if err != nil {
		return nil, schema.GroupVersion{}, err
	}
	for _, w := range warnings {
		request.AddWarning(r.Context(), w)
	}
	decoded := obj
	if old, ok := obj.(*policyv1beta1.Eviction); ok {
		into.ObjectMeta, into.DeleteOptions = old.ObjectMeta, old.DeleteOptions
		obj = into
	}
	if obj != runtime.Object(into) {
		// DecodeBody returns into, or an Eviction of another version of
		// policy: one without a policy/v1beta1 counterpart cannot be read.
		return nil, schema.GroupVersion{}, apierrors.NewBadRequest(fmt.Sprintf("the API version in the data (%s) does not match the expected API version (%s)", gvk.GroupVersion(), want.GroupVersion()))
	}
	return decoded, gvk.GroupVersion(), nil
}

// write answers obj in target, the media type Serve negotiated.
func (h *Handler) write(w http.ResponseWriter, r *http.Request, target codec.Target, code int, obj runtime.Object) {
	err := h.codecs.SetKind(obj, metav1.SchemeGroupVersion)
	var data []byte
	if err == nil {
		data, err = runtime.Encode(target.Info.Serializer, obj)
	}
	if err != nil {
		endpoints.WriteError(w, r, h.codecs, err, evictGR, "")
		return
	}
	audit.LogResponseObject(r.Context())
	w.Header().Set("Content-Type", target.ContentType)
	w.WriteHeader(code)
	_, _ = w.Write(data)
}

// serverPods reads pods from the server's store and deletes them through
// its pods handler.
type serverPods struct {
	stores Stores
	h      *endpoints.Handler
}

func (p serverPods) GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	obj, err := p.h.GetObject(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, apierrors.NewInternalError(fmt.Errorf("pods store returned %T", obj))
	}
	return pod, nil
}

func (p serverPods) DeletePod(ctx context.Context, namespace, name string, opts *metav1.DeleteOptions) error {
	info := &request.Info{IsResourceRequest: true, Verb: "delete", APIVersion: "v1",
		Namespace: namespace, Resource: "pods", Name: name, Parts: []string{"pods", name}}
	_, _, err := p.h.DeleteObjectUnadmitted(ctx, info, p.stores.ObjectKey(podsGR, namespace, name), opts)
	return err
}

// UpdatePodStatus rewrites the stored pod with a compare-and-swap,
// calling mutate on the latest version (again after a lost race).
func (p serverPods) UpdatePodStatus(ctx context.Context, namespace, name string, mutate func(*corev1.Pod) error) (*corev1.Pod, error) {
	s, ok := p.stores.Store(podsGR)
	if !ok {
		return nil, apierrors.NewInternalError(fmt.Errorf("pods are not served"))
	}
	out := &corev1.Pod{}
	err := s.GuaranteedUpdate(ctx, p.stores.ObjectKey(podsGR, namespace, name), out, false, nil,
		func(in runtime.Object) (runtime.Object, error) {
			cur, ok := in.(*corev1.Pod)
			if !ok {
				return nil, fmt.Errorf("pods store returned %T", in)
			}
			next := cur.DeepCopy()
			if err := mutate(next); err != nil {
				return nil, err
			}
			return next, nil
		})
	var status apierrors.APIStatus
	switch {
	case err == nil:
		return out, nil
	case errors.As(err, &status):
		return nil, err
	default:
		return nil, endpoints.ToStatusError(err, endpoints.VerbUpdate, podsGR, name)
	}
}

// serverBudgets reads and CAS-writes budgets in the server's store.
type serverBudgets struct{ stores Stores }

func (b serverBudgets) store() (storage.Interface, error) {
	s, ok := b.stores.Store(budgetGR)
	if !ok {
		return nil, apierrors.NewInternalError(fmt.Errorf("poddisruptionbudgets are not served"))
	}
	return s, nil
}

func (b serverBudgets) ListBudgets(ctx context.Context, namespace string) ([]*policyv1.PodDisruptionBudget, error) {
	s, err := b.store()
	if err != nil {
		return nil, err
	}
	list := &policyv1.PodDisruptionBudgetList{}
	if err := s.GetList(ctx, b.stores.ListKey(budgetGR, namespace), storage.ListOptions{
		Recursive: true, Predicate: storage.Everything()}, list); err != nil {
		return nil, endpoints.ToStatusError(err, endpoints.VerbList, budgetGR, "")
	}
	out := make([]*policyv1.PodDisruptionBudget, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, &list.Items[i])
	}
	return out, nil
}

func (b serverBudgets) GetBudget(ctx context.Context, namespace, name string) (*policyv1.PodDisruptionBudget, error) {
	s, err := b.store()
	if err != nil {
		return nil, err
	}
	pdb := &policyv1.PodDisruptionBudget{}
	if err := s.Get(ctx, b.stores.ObjectKey(budgetGR, namespace, name), storage.GetOptions{}, pdb); err != nil {
		return nil, endpoints.ToStatusError(err, endpoints.VerbGet, budgetGR, name)
	}
	return pdb, nil
}

func (b serverBudgets) UpdateBudgetStatus(ctx context.Context, pdb *policyv1.PodDisruptionBudget) error {
	s, err := b.store()
	if err != nil {
		return err
	}
	rv := pdb.ResourceVersion
	err = s.GuaranteedUpdate(ctx, b.stores.ObjectKey(budgetGR, pdb.Namespace, pdb.Name), &policyv1.PodDisruptionBudget{}, false,
		&storage.Preconditions{ResourceVersion: &rv},
		func(in runtime.Object) (runtime.Object, error) {
			cur, ok := in.(*policyv1.PodDisruptionBudget)
			if !ok {
				return nil, fmt.Errorf("poddisruptionbudgets store returned %T", in)
			}
			out := cur.DeepCopy()
			out.Status = pdb.Status
			return out, nil
		})
	if err != nil {
		return endpoints.ToStatusError(err, endpoints.VerbUpdate, budgetGR, pdb.Name)
	}
	return nil
}
