package endpoints

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubeproof/kubeproof/impl/apiserver/admission"
	"github.com/kubeproof/kubeproof/impl/apiserver/audit"
	"github.com/kubeproof/kubeproof/impl/apiserver/request"
	"github.com/kubeproof/kubeproof/impl/storage"
)

// generateNameAttempts bounds the server-side retries of a generateName
// create whose random name collided.
const generateNameAttempts = 8

func (h *Handler) create(w http.ResponseWriter, r *http.Request, info *request.Info) error {
	scratch := bodyBuffers.Get().(*[]byte)
	wo, target, body, err := h.readWriteInto(w, r, "CreateOptions", *scratch)
	if err != nil {
		bodyBuffers.Put(scratch)
		return err
	}
	obj, warnings, err := h.decode(r, body, h.gvk, h.res.New(), wo.fieldValidation)
	// Decoding copies whatever the object keeps: the body can go back.
	if cap(body) <= maxPooledBody {
		*scratch = body[:0]
	}
	bodyBuffers.Put(scratch)
	if err != nil {
		return err
	}
	recordWarnings(r, warnings)
	audit.LogRequestObject(r.Context(), accessor(obj), h.opts.Codecs.RequestObjectJSON(obj, h.gvk.GroupVersion(), h.res.Strategy.Default))
	if h.res.Namespaced {
		m := accessor(obj)
		switch {
		case m.GetNamespace() == info.Namespace:
		case m.GetNamespace() == "":
			m.SetNamespace(info.Namespace)
		case info.Namespace == "":
			// An empty namespace segment (/namespaces//pods): as
			// kube-apiserver's create handler, the request's empty
			// namespace wins, as it would for a cluster-scoped object.
			m.SetNamespace("")
		default:
			return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
		}
	}
	// Record the creating manager in managedFields, as kube-apiserver's
	// field manager does for every create.
	if obj, err = h.trackCreate(r, obj); err != nil {
		return err
	}
	// trackCreate defaulted obj: defaulting is idempotent (the
	// registry's fuzz test), so a second run would change nothing.
	out, err := h.createObject(r.Context(), info, obj, wo.admission, true)
	if err != nil {
		return err
	}
	done := transformTimer(target)
	err = h.opts.Codecs.SetKind(out, h.res.GroupVersion)
	done()
	if err != nil {
		return err
	}
	writeResponse(w, r, target, http.StatusCreated, out)
	return nil
}

// bodyBuffers hold create request bodies from their read until they are
// decoded. Decoding (JSON, YAML, protobuf) copies every string, byte slice
// and raw extension the object keeps, so nothing refers to a body after.
var bodyBuffers = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledBody: bodies larger than this are left to the GC.
const maxPooledBody = 64 << 10

// CreateObject runs the create path on a decoded object: defaulting,
// admission, PrepareForCreate, system fields, the store's field
// initialization (FieldInitializer), validation, and the write (skipped
// when dryRun). info may be nil for internal callers.
func (h *Handler) CreateObject(ctx context.Context, info *request.Info, obj runtime.Object, dryRun bool) (runtime.Object, error) {
	var opts admission.RequestOptions
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	return h.createObject(ctx, info, obj, opts, false)
}

// createObject is CreateObject for a request with options opts (a dry run
// when they say so), admitted with them; defaulted says obj's strategy has
// already defaulted it (a POST's, in trackCreate), which it then skips.
func (h *Handler) createObject(ctx context.Context, info *request.Info, obj runtime.Object, opts admission.RequestOptions, defaulted bool) (runtime.Object, error) {
	dryRun := len(opts.DryRun) > 0
	ctx, finish := h.beginWrite(ctx, dryRun)
	defer finish()
	m := accessor(obj)
	if !h.res.Namespaced {
		m.SetNamespace("")
	} else if m.GetNamespace() == "" && (info == nil || !info.UnderNamespace) {
		// An internal caller's object without a namespace. A POST to an
		// empty namespace segment (/namespaces//pods) goes on, as in
		// kube-apiserver, through admission to validation, whose
		// metadata.namespace "Required value" refuses it (422).
		return nil, apierrors.NewBadRequest("Namespace parameter required.")
	}
	// kube-apiserver's store refuses a resourceVersion that is an unsigned
	// number other than 0 (a 500 there; bad input, so a 400 here) and
	// ignores any other. A dry run is answered without that check, as
	// kube-apiserver's dry-run store answers it.
	if rv := m.GetResourceVersion(); rv != "" && !dryRun {
		if n, err := strconv.ParseUint(rv, 10, 64); err == nil && n != 0 {
			return nil, apierrors.NewBadRequest("resourceVersion should not be set on objects to be created")
		}
	}
	if !defaulted {
		h.res.Strategy.Default(obj)
	}
	ns := m.GetNamespace()
	// As kube-apiserver's create handler: a Namespace's write is admitted
	// in the namespace it names (empty while a generateName has not been
	// turned into a name yet, and still so for the validating plugins).
	admNS := ns
	if h.isNamespace {
		admNS = m.GetName()
	}
	attrs := h.adm(ctx, admission.Create, info, admNS, m.GetName(), obj, nil, opts)
	if err := h.opts.Admission.Admit(ctx, attrs); err != nil {
		return nil, err
	}

	if c := h.opts.WriteCheck; c != nil {
		if err := c(ctx, info, h.gr, obj, nil); err != nil {
			return nil, err
		}
	}
	// kube-apiserver's BeforeCreate: system fields are the server's.
	m.SetDeletionTimestamp(nil)
	m.SetDeletionGracePeriodSeconds(nil)
	h.res.Strategy.PrepareForCreate(ctx, obj)
	m.SetUID(uuid.NewUUID())
	now := metav1.NewTime(h.now().Truncate(1e9))
	m.SetCreationTimestamp(now)
	m.SetSelfLink("")
	generated := false
	if m.GetName() == "" && m.GetGenerateName() != "" {
		m.SetName(generateName(m.GetGenerateName()))
		generated = true
	}
	if err := h.initCreate(ctx, obj); err != nil {
		return nil, err
	}
	if errs := h.res.Strategy.Validate(ctx, obj); len(errs) > 0 {
		return nil, apierrors.NewInvalid(h.gvk.GroupKind(), m.GetName(), errs)
	}
	if m.GetName() == "" {
		return nil, apierrors.NewInvalid(h.gvk.GroupKind(), "", field.ErrorList{
			field.Required(field.NewPath("metadata", "name"), "name or generateName is required")})
	}
	key, err := h.objectKey(ns, m.GetName())
	if err != nil {
		return nil, err
	}
	// Validation gets attributes of its own (the name may have been
	// generated since), in the mutators' allocation: they are done with it.
	*attrs = h.admAttributes(ctx, admission.Create, info, admNS, m.GetName(), obj, nil, opts)
	if err := h.opts.Admission.Validate(ctx, attrs); err != nil {
		return nil, err
	}
	if dryRun {
		return h.dryRunCreate(ctx, key, obj)
	}
	out := h.res.New()
	for attempt := 1; ; attempt++ {
		err = h.store.Create(ctx, key, obj, out)
		if err == nil {
			return out, nil
		}
		if !generated || !storage.IsExists(err) {
			return nil, ToStatusError(err, VerbCreate, h.gr, m.GetName())
		}
		if attempt == generateNameAttempts {
			return nil, apierrors.NewGenerateNameConflict(h.gr, m.GetName(), 1)
		}
		m.SetName(generateName(m.GetGenerateName()))
		if key, err = h.objectKey(ns, m.GetName()); err != nil {
			return nil, err
		}
	}
}

// nameAlphabet is the alphabet of generated name suffixes: no vowels, so no
// words, and no look-alike characters (as kube-apiserver's generator).
const nameAlphabet = "bcdfghjklmnpqrstvwxz2456789"

// generateName appends five random characters to base, trimming base so
// the name fits in 63 characters.
func generateName(base string) string {
	const suffix, max = 5, 63
	if len(base) > max-suffix {
		base = base[:max-suffix]
	}
	b := make([]byte, suffix)
	for i := range b {
		b[i] = nameAlphabet[rand.IntN(len(nameAlphabet))]
	}
	return fmt.Sprintf("%s%s", base, b)
}
