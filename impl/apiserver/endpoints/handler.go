// Package endpoints serves the REST verbs of one resource (get, list,
// watch, create, update, patch, delete, deletecollection and the status,
// scale, binding and finalize subresources) on top of a storage.Interface,
// with the per-kind behaviour taken from a resource.Resource.
//
// Write paths follow kube-apiserver's order: decode, default, mutating
// admission, prepare (PrepareForCreate/Update), validate, validating
// admission, then one compare-and-swap write (STORE-2, STORE-3). Bad input
// is answered with a Status error before anything is written.
package endpoints

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubeproof/kubeproof/impl/apiserver/admission"
	"github.com/kubeproof/kubeproof/impl/apiserver/audit"
	"github.com/kubeproof/kubeproof/impl/apiserver/codec"
	"github.com/kubeproof/kubeproof/impl/apiserver/request"
	"github.com/kubeproof/kubeproof/impl/apiserver/resource"
	"github.com/kubeproof/kubeproof/impl/storage"
)

// Options are shared by every resource's handler.
type Options struct {
	Codecs    *codec.Codecs
	Admission *admission.Chain
	// MaxBodyBytes limits request bodies (413 beyond it).
	MaxBodyBytes int64
	// MinRequestTimeout: a watch without timeoutSeconds ends after a random
	// duration between it and twice it, spreading reconnects.
	MinRequestTimeout time.Duration
	// WatchStarted is called when a watch starts and the returned func when
	// it ends (for the open-watches gauge); may be nil.
	WatchStarted func(info *request.Info) (done func())
	// Now returns the current time (tests may fix it).
	Now func() time.Time
	// StoragePathPrefix is the etcd prefix of every key, named in
	// kube-apiserver's precondition errors ("/registry" when empty).
	StoragePathPrefix string
	// ServedVersion is the Kubernetes major and minor version the server
	// reports, against which a kind's deprecation release is compared;
	// zero counts as past every deprecation, as kube-apiserver's check
	// without version information.
	ServedVersion [2]int
	// WriteCheck, when set, is asked about every create and main-resource
	// update after mutating admission, before the object is prepared and
	// validated: old is nil on a create, info nil for the server's own
	// writes. A non-nil error (a Status error) is the answer. The API
	// server sets it once its authorizer exists, before serving; it is
	// where kube-apiserver's RBAC storage prevents privilege escalation
	// (package auth/rbac/escalation).
	WriteCheck func(ctx context.Context, info *request.Info, gr schema.GroupResource, obj, old runtime.Object) error
	// ConvertFrom, when set, converts obj, an object of kind from, to the
	// kind of the served resource to when a served resource of kind from
	// shares to's storage (core/v1 and events.k8s.io/v1 events); ok is
	// false when none does. A JSON or merge patch whose result names the
	// other kind is converted with it, as kube-apiserver's codec converts
	// it through the internal type.
	ConvertFrom func(obj runtime.Object, from schema.GroupVersionKind, to schema.GroupVersionResource) (out runtime.Object, ok bool, err error)
}

// Handler serves one resource.
type Handler struct {
	res    *resource.Resource
	store  storage.Interface
	opts   *Options
	gr     schema.GroupResource
	gvk    schema.GroupVersionKind
	prefix string
	// fieldLabels are the field selector keys the kind supports.
	fieldLabels map[string]bool
	isNamespace bool
	isPod       bool
	// encodings are watch events' encodings shared between watchers.
	encodings *sharedEncodings
	// empty is the kind's empty object, the live object of every create's
	// field manager call (trackCreate). It is shared: nothing may change it.
	empty runtime.Object
	// deprecation is the warning every request gets when the kind is
	// deprecated at the served version (deprecationWarning), and
	// deprecationHeader the same as a Warning header; empty otherwise.
	deprecation, deprecationHeader string
	// removedRelease is the release ("1.40") the deprecated kind goes
	// away in, when it names one (deprecatedRemovedRelease).
	removedRelease string
}

// NewHandler builds the handler of res stored in store under key prefix
// prefix (e.g. "/pods").
func NewHandler(res *resource.Resource, store storage.Interface, prefix string, opts *Options) *Handler {
	h := &Handler{
		res: res, store: store, opts: opts, prefix: prefix,
		gr:          res.GroupVersionResource().GroupResource(),
		gvk:         res.GroupVersionKind(),
		fieldLabels: map[string]bool{"metadata.name": true, "metadata.namespace": true},
		encodings:   newSharedEncodings(),
		empty:       res.New(),
	}
	h.deprecation = deprecationWarning(h.gvk, h.empty, opts.ServedVersion[0], opts.ServedVersion[1])
	h.deprecationHeader = deprecationHeader(h.gvk, h.empty, opts.ServedVersion[0], opts.ServedVersion[1])
	if h.deprecation != "" {
		h.removedRelease = deprecatedRemovedRelease(h.empty)
	}
	h.isNamespace = h.gr == schema.GroupResource{Resource: "namespaces"}
	h.isPod = h.gr == schema.GroupResource{Resource: "pods"}
	if _, f, err := res.Strategy.GetAttrs(res.New()); err == nil {
		for k := range f {
			h.fieldLabels[k] = true
		}
	}
	return h
}

// Resource returns the resource h serves.
func (h *Handler) Resource() *resource.Resource { return h.res }

func (h *Handler) now() time.Time {
	if h.opts.Now != nil {
		return h.opts.Now()
	}
	return time.Now()
}

// ServeHTTP routes the request (route), then serves it.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	info := request.InfoFrom(r.Context())
	if info == nil {
		info = request.Parse(r)
	}
	serve, err := h.route(info)
	if err != nil {
		// kube-apiserver's router answers a path or method none of the
		// resource's routes serves: no route handler runs, so neither the
		// kind's deprecation warning nor its audit annotations are added.
		WriteStatusError(w, r, h.opts.Codecs, ToStatusError(err, storageVerb(info.Verb), h.gr, info.Name))
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w, r = collectWarnings(w, r)
		// first of a write's warnings, as kube-apiserver adds it before
		// its handler runs; collected so that it is capped with them.
		request.AddWarning(r.Context(), h.deprecation)
	} else if h.deprecationHeader != "" {
		w.Header().Add("Warning", h.deprecationHeader)
	}
	if err := serve(w, r, info); err != nil {
		WriteStatusError(w, r, h.opts.Codecs, ToStatusError(err, storageVerb(info.Verb), h.gr, info.Name))
	}
	if h.deprecation != "" {
		// As kube-apiserver's route instrumentation marks a served
		// request to a deprecated kind once its handler is done.
		audit.AddAnnotation(r.Context(), auditDeprecatedKey, "true")
		if h.removedRelease != "" {
			audit.AddAnnotation(r.Context(), auditRemovedReleaseKey, h.removedRelease)
		}
	}
}

// Deprecated reports whether the resource's kind is deprecated at the
// served version, and the release it goes away in ("" when it names none).
func (h *Handler) Deprecated() (removedRelease string, deprecated bool) {
	return h.removedRelease, h.deprecation != ""
}

// serveFunc serves a request route chose.
type serveFunc func(w http.ResponseWriter, r *http.Request, info *request.Info) error

// route is kube-apiserver's router for this resource: it returns the
// handler of the route that serves info, or the router's own answer when
// none does (notFoundPath's 404, MethodNotAllowed's 405). Pure: nothing is
// read or written before a route is chosen.
func (h *Handler) route(info *request.Info) (serveFunc, error) {
	// Paths kube-apiserver has no route for (segments past a
	// subresource, a cluster-scoped resource under a namespace, a
	// namespaced object outside one) get its router's 404.
	if len(info.Parts) > 3 {
		return nil, notFoundPath()
	}
	if h.isPod && isLegacyBindings(info) {
		return h.routeLegacyBindings(info)
	}
	if !h.res.Namespaced && info.UnderNamespace {
		// Namespaces included: /namespaces/a/namespaces/b is not
		// namespace b's path.
		return nil, notFoundPath()
	}
	if h.res.Namespaced && !info.UnderNamespace && (info.Name != "" || info.Subresource != "") {
		// namespaced objects are addressed under /namespaces/<ns>/. An
		// empty namespace segment (/namespaces//pods/x) is still that
		// route, whose storage refuses the empty namespace (objectKey's
		// "Namespace parameter required.").
		return nil, notFoundPath()
	}
	if info.Name == "" && info.Subresource == "" {
		// A collection's routes are list/watch, create and
		// deletecollection, and across namespaces list/watch only: any
		// other method is the router's 405 (a DELETE of every namespace's
		// objects included). An empty namespace segment
		// (/namespaces//pods) is still the namespaced collection's route,
		// with the empty namespace (see create and deleteCollection).
		switch info.Verb {
		case "update", "patch":
			return nil, MethodNotAllowed()
		case "create", "deletecollection":
			if h.res.Namespaced && !info.UnderNamespace {
				return nil, MethodNotAllowed()
			}
		}
	}
	if info.Subresource == "" {
		return h.routeMain(info)
	}
	if info.Name == "" {
		// pods//status: the subresource's route, chosen by the HTTP
		// method, refuses the empty name (emptyName).
		routed := *info
		routed.Verb = info.RouteVerb()
		if _, err := h.routeSubresourceOf(&routed); err != nil {
			return nil, err
		}
		return h.emptyName, nil
	}
	return h.routeSubresourceOf(info)
}

// routeSubresourceOf routes a request for one of an object's
// subresources.
func (h *Handler) routeSubresourceOf(info *request.Info) (serveFunc, error) {
	switch info.Subresource {
	case "status":
		if h.res.Status == nil {
			return nil, notFoundPath()
		}
		return h.routeSubresource(info, modeStatus)
	case "approval":
		if h.res.Approval == nil {
			return nil, notFoundPath()
		}
		// Served as a status-like subresource with the approval strategy.
		ah := *h
		res := *h.res
		res.Status = res.Approval
		ah.res = &res
		return ah.routeSubresource(info, modeStatus)
	case "ephemeralcontainers":
		if h.res.EphemeralContainers == nil {
			return nil, notFoundPath()
		}
		return h.routeSubresource(info, modeEphemeralContainers)
	case "resize":
		if h.res.Resize == nil {
			return nil, notFoundPath()
		}
		return h.routeSubresource(info, modeResize)
	case "scale":
		if h.res.Scale == nil {
			return nil, notFoundPath()
		}
		return h.routeSubresource(info, modeScale)
	case "binding":
		if !h.isPod {
			return nil, notFoundPath()
		}
		if info.Verb != "create" {
			return nil, MethodNotAllowed()
		}
		return h.bind, nil
	case "finalize":
		if !h.isNamespace {
			return nil, notFoundPath()
		}
		if info.Verb != "update" {
			return nil, MethodNotAllowed()
		}
		return h.routeSubresource(info, modeFinalize)
	}
	return nil, notFoundPath()
}

// isWatchPath reports whether info's path is one of the deprecated watch
// paths (/api/v1/watch/…, /apis/<group>/<version>/watch/…).
func isWatchPath(info *request.Info) bool {
	prefix := "/" + info.APIPrefix + "/"
	if info.APIGroup != "" {
		prefix += info.APIGroup + "/"
	}
	return strings.HasPrefix(info.Path, prefix+info.APIVersion+"/watch/")
}

// emptyName serves a subresource's route whose name segment is empty
// (pods//status): kube-apiserver's handlers read the request's name before
// anything else (a patch's content type excepted) and refuse an empty one.
func (h *Handler) emptyName(_ http.ResponseWriter, r *http.Request, _ *request.Info) error {
	if r.Method == http.MethodPatch {
		if _, err := patchTypeOf(r); err != nil {
			return err
		}
	}
	return NameRequired()
}

// NameRequired is kube-apiserver's answer to a request whose route names
// an object by an empty path segment (pods//status, nodes//proxy): its
// handlers' first step reads the name from the path and refuses an empty
// one.
func NameRequired() error { return apierrors.NewBadRequest("name must be provided") }

// notFoundPathMessage is the message of kube-apiserver's router's 404.
const notFoundPathMessage = "the server could not find the requested resource"

func notFoundPath() error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusNotFound,
		Reason: metav1.StatusReasonNotFound, Message: notFoundPathMessage,
		Details: &metav1.StatusDetails{},
	}}
}

func (h *Handler) hasVerb(v string) bool {
	for _, x := range h.res.Verbs {
		if x == v {
			return true
		}
	}
	return false
}

func (h *Handler) routeMain(info *request.Info) (serveFunc, error) {
	if info.Verb == "watch" && !h.hasVerb("watch") {
		// A resource that cannot be watched (componentstatuses) has no
		// watch routes; its list handler refuses ?watch=true itself, as
		// kube-apiserver's list handler does for a storage that is no
		// watcher.
		if isWatchPath(info) || info.Name != "" || !h.hasVerb("list") {
			return nil, notFoundPath()
		}
		return nil, apierrors.NewMethodNotSupported(h.gr, "watch")
	}
	if !h.hasVerb(info.Verb) {
		return nil, MethodNotAllowed()
	}
	switch info.Verb {
	case "get":
		return h.get, nil
	case "list":
		return h.list, nil
	case "watch":
		return h.watch, nil
	case "create":
		if info.Name != "" {
			return nil, MethodNotAllowed()
		}
		return h.create, nil
	case "update":
		return withMode(h.update, modeMain), nil
	case "patch":
		return withMode(h.patch, modeMain), nil
	case "delete":
		return h.delete, nil
	case "deletecollection":
		return h.deleteCollection, nil
	}
	return nil, MethodNotAllowed()
}

func (h *Handler) routeSubresource(info *request.Info, m mode) (serveFunc, error) {
	switch info.Verb {
	case "get":
		if m != modeFinalize {
			return withMode(h.getSubresource, m), nil
		}
	case "update":
		return withMode(h.update, m), nil
	case "patch":
		if m != modeFinalize {
			return withMode(h.patch, m), nil
		}
	}
	return nil, MethodNotAllowed()
}

// withMode is serve for one subresource mode m.
func withMode(serve func(http.ResponseWriter, *http.Request, *request.Info, mode) error, m mode) serveFunc {
	return func(w http.ResponseWriter, r *http.Request, info *request.Info) error { return serve(w, r, info, m) }
}

// objectKey is the storage key of one object; names that cannot be a path
// segment are a 400, as in kube-apiserver's key functions.
func (h *Handler) objectKey(namespace, name string) (string, error) {
	if name == "" {
		return "", apierrors.NewBadRequest("Name parameter required.")
	}
	if msgs := path.IsValidPathSegmentName(name); len(msgs) != 0 {
		return "", apierrors.NewBadRequest(fmt.Sprintf("Name parameter invalid: %q: %s", name, strings.Join(msgs, ";")))
	}
	if !h.res.Namespaced {
		return h.prefix + "/" + name, nil
	}
	if namespace == "" {
		return "", apierrors.NewBadRequest("Namespace parameter required.")
	}
	if msgs := path.IsValidPathSegmentName(namespace); len(msgs) != 0 {
		return "", apierrors.NewBadRequest(fmt.Sprintf("Namespace parameter invalid: %q: %s", namespace, strings.Join(msgs, ";")))
	}
	return h.prefix + "/" + namespace + "/" + name, nil
}

// listKey is the storage prefix of a list or watch.
func (h *Handler) listKey(namespace string) (string, error) {
	if h.res.Namespaced && namespace != "" {
		if msgs := path.IsValidPathSegmentName(namespace); len(msgs) != 0 {
			return "", apierrors.NewBadRequest(fmt.Sprintf("Namespace parameter invalid: %q: %s", namespace, strings.Join(msgs, ";")))
		}
		return h.prefix + "/" + namespace + "/", nil
	}
	return h.prefix + "/", nil
}

// readBody reads the request body up to the limit (413 beyond).
// readWrite reads what every write request (create, update, patch, binding)
// starts with: its options (optionsKind names them in errors), the response
// format the client accepts, and the body.
func (h *Handler) readWrite(w http.ResponseWriter, r *http.Request, optionsKind string) (writeOptions, codec.Target, []byte, error) {
	return h.readWriteInto(w, r, optionsKind, nil)
}

// readWriteInto is readWrite reading the body into scratch when it fits
// (see readAll).
func (h *Handler) readWriteInto(w http.ResponseWriter, r *http.Request, optionsKind string, scratch []byte) (writeOptions, codec.Target, []byte, error) {
	wo, err := parseWriteOptions(r, optionsKind)
	if err != nil {
		return writeOptions{}, codec.Target{}, nil, err
	}
	target, err := h.opts.Codecs.Negotiate(r, nil, false)
	if err != nil {
		return writeOptions{}, codec.Target{}, nil, err
	}
	body, err := h.readBodyInto(w, r, scratch)
	if err != nil {
		return writeOptions{}, codec.Target{}, nil, err
	}
	return wo, target, body, nil
}

func (h *Handler) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	return h.readBodyInto(w, r, nil)
}

func (h *Handler) readBodyInto(w http.ResponseWriter, r *http.Request, scratch []byte) ([]byte, error) {
	if r.Body == nil {
		return nil, nil
	}
	limit := h.opts.MaxBodyBytes
	if limit <= 0 {
		limit = 3 << 20
	}
	if r.ContentLength > limit {
		return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", limit))
	}
	// A body of announced length (at most the limit, above) cannot run
	// past it: net/http's body reader stops there and an HTTP/2 server
	// resets a stream whose data exceed it. readAll keeps the limit anyway
	// (for callers whose body is not a server's), so MaxBytesReader, an
	// allocation per write, is only needed for a body of unknown length,
	// where it also has an HTTP/1 server close the connection after the 413.
	body := io.Reader(r.Body)
	if r.ContentLength <= 0 {
		body = http.MaxBytesReader(w, r.Body, limit)
	}
	b, err := readAll(body, r.ContentLength, limit, scratch)
	if err != nil {
		var mbe *http.MaxBytesError
		if ok := asMaxBytes(err, &mbe); ok || err == errBodyTooLarge {
			return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", limit))
		}
		return nil, apierrors.NewBadRequest(fmt.Sprintf("reading request body: %v", err))
	}
	return b, nil
}

// errBodyTooLarge is readAll's answer to a body of announced length that
// runs past its limit.
var errBodyTooLarge = errors.New("request body larger than its limit")

// readAll is io.ReadAll sized by the request's Content-Length when it is
// known: the body arrives in one Read into one allocation, instead of
// ReadAll's growing buffer taking several (each Read of an HTTP/2 body is a
// round trip to the connection's serving goroutine). A body longer than
// announced still reads whole, up to limit bytes (errBodyTooLarge beyond);
// of unknown length, the caller's reader enforces the limit. The body goes
// into scratch when the announced length fits in it.
func readAll(r io.Reader, contentLength, limit int64, scratch []byte) ([]byte, error) {
	if contentLength <= 0 {
		return io.ReadAll(r)
	}
	// One byte more than announced, so that the Read reporting EOF does
	// not have to grow the buffer first.
	b := scratch[:0]
	if int64(cap(b)) < contentLength+1 {
		b = make([]byte, 0, contentLength+1)
	}
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return b, err
		}
		if int64(len(b)) > limit {
			return nil, errBodyTooLarge
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}

// CreateOptions reads the query parameters of a create (CreateOptions)
// for subresources served outside this package (pods/eviction) as this
// package's creates read theirs: a dryRun other than All, a
// fieldValidation other than Strict, Warn or Ignore, or a fieldManager
// that is too long or not printable, is a 422 Invalid CreateOptions, as
// kube-apiserver's create handler answers. opts are the parameters as
// sent (opts.DryRun nil when absent), which the create is admitted with
// (AdmitCreate); fieldValidation is Warn when absent.
func CreateOptions(r *http.Request) (opts admission.RequestOptions, fieldValidation string, err error) {
	wo, err := parseWriteOptions(r, "CreateOptions")
	if err != nil {
		return admission.RequestOptions{}, "", err
	}
	if _, err := parseManagerParams(r, "CreateOptions", ""); err != nil {
		return admission.RequestOptions{}, "", err
	}
	return wo.admission, wo.fieldValidation, nil
}

// CollectWarnings is collectWarnings for subresources served outside this
// package (pods/eviction): the warnings added through the returned
// request's context (admission plugins', the body's unknown fields under
// fieldValidation=Warn) go out as Warning headers with the response.
func CollectWarnings(w http.ResponseWriter, r *http.Request) (http.ResponseWriter, *http.Request) {
	return collectWarnings(w, r)
}

// writeOptions are the query parameters of create, update and patch.
type writeOptions struct {
	dryRun          bool
	fieldValidation string // Strict, Warn or Ignore
	// admission are the parameters as sent, which admission webhooks
	// receive in request.options.
	admission admission.RequestOptions
}

func parseWriteOptions(r *http.Request, kind string) (writeOptions, error) {
	q := request.Query(r)
	dry := q["dryRun"]
	fv := q.Get("fieldValidation")
	var errs field.ErrorList
	// Absent parameters are valid; their field paths are only built for
	// values that need checking.
	if len(dry) > 0 {
		errs = append(errs, metav1validation.ValidateDryRun(field.NewPath("dryRun"), dry)...)
	}
	if fv != "" {
		errs = append(errs, metav1validation.ValidateFieldValidation(field.NewPath("fieldValidation"), fv)...)
	}
	if len(errs) > 0 {
		return writeOptions{}, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: kind}, "", errs)
	}
	sent := admission.RequestOptions{DryRun: dry, FieldManager: q.Get("fieldManager"), FieldValidation: fv}
	if fv == "" {
		fv = metav1.FieldValidationWarn
	}
	return writeOptions{dryRun: len(dry) > 0, fieldValidation: fv, admission: sent}, nil
}

// decode decodes a request body of a create or update into a new object
// of kind want (in the resource's group version), applying the
// fieldValidation directive: unknown or duplicate fields are a 400 under
// Strict and warnings under Warn. A body that does not decode into want is
// a 400 in kube-apiserver's words (DecodeError), and one of want's kind in
// another version of its group the API version mismatch.
func (h *Handler) decode(r *http.Request, body []byte, want schema.GroupVersionKind, into runtime.Object, fv string) (runtime.Object, []string, error) {
	dec, err := h.bodyDecoder(r, fv)
	if err != nil {
		return nil, nil, err
	}
	return DecodeInto(dec, body, want, into, fv)
}

// DecodeInto decodes body with dec into into, an object of kind want, as
// kube-apiserver's create and update handlers do, under the
// fieldValidation directive fv (dec is the strict serializer unless fv is
// Ignore): it returns into and the unknown and duplicate fields as
// warnings (Warn), or a 400 BadRequest: a body that does not decode into
// want in upstream's words (DecodeError), one of want's kind in another
// version of its group the API version mismatch.
func DecodeInto(dec runtime.Decoder, body []byte, want schema.GroupVersionKind, into runtime.Object, fv string) (runtime.Object, []string, error) {
	obj, gvk, warnings, err := DecodeBody(dec, body, want, into, fv)
	if err != nil {
		return nil, nil, err
	}
	if gvk.GroupVersion() != want.GroupVersion() {
		return nil, nil, apiVersionMismatch(gvk.GroupVersion(), want.GroupVersion())
	}
	return obj, warnings, nil
}

// DecodeBody is DecodeInto for an endpoint that accepts more than one
// version of want's kind (pods/eviction): it does not check the version,
// and returns the object decoded (into, or want's kind in the version gvk
// names) with its group version kind.
func DecodeBody(dec runtime.Decoder, body []byte, want schema.GroupVersionKind, into runtime.Object, fv string) (runtime.Object, *schema.GroupVersionKind, []string, error) {
	obj, gvk, err := dec.Decode(body, &want, into)
	d := decodeOutcome(obj, gvk, err, want, into, fv)
	if d.err != nil {
		return nil, nil, nil, DecodeError(want.Kind, d.err, d.gvk, body)
	}
	return d.obj, d.gvk, d.warnings, nil
}

// apiVersionMismatch is kube-apiserver's 400 for a body whose object is of
// the resource's kind in a group version other than the endpoint's.
func apiVersionMismatch(got, want schema.GroupVersion) error {
	return apierrors.NewBadRequest(fmt.Sprintf("the API version in the data (%s) does not match the expected API version (%s)", got, want))
}

// decodedBody is what decodeBody read from a body.
type decodedBody struct {
	// obj is the object decoded: into, or an object sharing want's
	// internal type in another group version (want's kind in another
	// version, or core/v1 and events.k8s.io/v1 Events), which only a JSON
	// or merge patch's result converts (convertPatched).
	obj runtime.Object
	// gvk is what the body names (defaulted from want), nil when the body
	// could not be read as an object with a kind.
	gvk *schema.GroupVersionKind
	// warnings are the unknown and duplicate fields under Warn.
	warnings []string
	// err is why the body does not decode into want, as kube-apiserver's
	// decoder says it: the serializer's error (malformed data, a kind or
	// version the scheme does not know, a field of the wrong type), a kind
	// upstream cannot convert to want's internal type (ConversionError),
	// or the strict decoding error under Strict.
	err error
}

// decodeBody decodes body into into, as a kind want, under the
// fieldValidation directive fv. Its error is only for a request it cannot
// decode at all (the content type); why the body does not decode is in
// the result.
func (h *Handler) decodeBody(r *http.Request, body []byte, want schema.GroupVersionKind, into runtime.Object, fv string) (decodedBody, error) {
	dec, err := h.bodyDecoder(r, fv)
	if err != nil {
		return decodedBody{}, err
	}
	obj, gvk, err := dec.Decode(body, &want, into)
	return decodeOutcome(obj, gvk, err, want, into, fv), nil
}

// bodyDecoder is the decoder of the request's content type, strict
// unless the fieldValidation directive fv is Ignore; its error is a 415.
func (h *Handler) bodyDecoder(r *http.Request, fv string) (runtime.Decoder, error) {
	info, err := h.opts.Codecs.RequestSerializer(r.Header.Get("Content-Type"))
	if err != nil {
		return nil, err
	}
	if fv != metav1.FieldValidationIgnore && info.StrictSerializer != nil {
		return info.StrictSerializer, nil
	}
	return info.Serializer, nil
}

// decodeOutcome judges what a serializer returned for a body decoded into
// into as a kind want, in the order kube-apiserver's codec does: the
// serializer's own error first; then the conversion to the internal type,
// which fails for another kind (and takes precedence over unknown
// fields); then the unknown and duplicate fields, an error under Strict
// and warnings otherwise.
func decodeOutcome(obj runtime.Object, gvk *schema.GroupVersionKind, err error, want schema.GroupVersionKind, into runtime.Object, fv string) decodedBody {
	var strict []error
	if err != nil {
		s, ok := runtime.AsStrictDecodingError(err)
		if !ok || obj == nil {
			return decodedBody{gvk: gvk, err: err}
		}
		strict = s.Errors()
	}
	if gvk == nil {
		// The serializers always name the kind of what they decode.
		return decodedBody{err: fmt.Errorf("decoding a %s: the serializer named no kind", want.Kind)}
	}
	if obj != into && !Converts(gvk.GroupKind(), want.GroupKind()) {
		return decodedBody{gvk: gvk, err: ConversionError(obj, want.GroupKind())}
	}
	d := decodedBody{obj: obj, gvk: gvk}
	if err != nil {
		if fv == metav1.FieldValidationStrict {
			return decodedBody{gvk: gvk, err: err}
		}
		for _, e := range strict {
			d.warnings = append(d.warnings, strictWarnings(e.Error())...)
		}
	}
	return d
}

// AdmitCreate runs the admission chain on the create of obj, of kind
// gvk, at info's subresource of h's resource, for a subresource served
// outside this package (pods/eviction), with the request's options opts
// (CreateOptions), as kube-apiserver's create handler does: the mutating
// plugins, then check (the subresource's own checks of the request, as
// its REST's Create makes before it calls the validating admission), then
// the validating plugins.
func (h *Handler) AdmitCreate(ctx context.Context, info *request.Info, gvk schema.GroupVersionKind, obj runtime.Object, opts admission.RequestOptions, check func() error) error {
	a := h.adm(ctx, admission.Create, info, info.Namespace, info.Name, obj, nil, opts)
	a.Kind = gvk
	if err := h.opts.Admission.Admit(ctx, a); err != nil {
		return err
	}
	if check != nil {
		if err := check(); err != nil {
			return err
		}
	}
	return h.opts.Admission.Validate(ctx, a)
}

// adm builds admission attributes for a write with the request's options
// opts; it is a dry run when they say so.
func (h *Handler) adm(ctx context.Context, op admission.Operation, info *request.Info, ns, name string, obj, old runtime.Object, opts admission.RequestOptions) *admission.Attributes {
	a := new(admission.Attributes)
	*a = h.admAttributes(ctx, op, info, ns, name, obj, old, opts)
	return a
}

// admAttributes is what adm points to.
func (h *Handler) admAttributes(ctx context.Context, op admission.Operation, info *request.Info, ns, name string, obj, old runtime.Object, opts admission.RequestOptions) admission.Attributes {
	dryRun := len(opts.DryRun) > 0
	if opts.Delete != nil {
		dryRun = len(opts.Delete.DryRun) > 0
	}
	sub := ""
	if info != nil {
		sub = info.Subresource
	}
	return admission.Attributes{
		Operation: op, Resource: h.res.GroupVersionResource(), Kind: h.gvk, Subresource: sub,
		Namespace: ns, Name: name, Object: obj, OldObject: old, DryRun: dryRun,
		User: request.UserFrom(ctx), Options: opts,
	}
}

func accessor(obj runtime.Object) metav1.Object {
	a, err := meta.Accessor(obj)
	if err != nil {
		// Every object a resource.New makes has ObjectMeta; this is a
		// programming error in a registry entry.
		panic(fmt.Sprintf("object %T has no metadata: %v", obj, err))
	}
	return a
}

// collectWarnings returns w and r for a write: admission plugins
// (PodSecurity's warn level, webhooks) add warnings through the request's
// context; they go out as Warning headers with the response, success or
// error. The collector lives in the writer and, under WithRequestInfo, is
// kept in the request's context node: one allocation, no request copy.
func collectWarnings(w http.ResponseWriter, r *http.Request) (http.ResponseWriter, *http.Request) {
	ww := &warningWriter{ResponseWriter: w}
	if ctx := request.CollectWarnings(r.Context(), &ww.warnings); ctx != r.Context() {
		r = r.WithContext(ctx)
	}
	return ww, r
}

// warningWriter adds the admission warnings collected for a request as
// Warning headers just before the response's header is written.
type warningWriter struct {
	http.ResponseWriter
	warnings request.Warnings
	sent     bool
}

func (ww *warningWriter) send() {
	if !ww.sent {
		ww.sent = true
		addWarnings(ww.ResponseWriter, ww.warnings.List())
	}
}

func (ww *warningWriter) WriteHeader(code int) {
	ww.send()
	ww.ResponseWriter.WriteHeader(code)
}

func (ww *warningWriter) Write(b []byte) (int, error) {
	ww.send()
	return ww.ResponseWriter.Write(b)
}

func (ww *warningWriter) Unwrap() http.ResponseWriter { return ww.ResponseWriter }
