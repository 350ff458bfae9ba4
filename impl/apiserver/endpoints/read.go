package endpoints

import (
	"bufio"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metainternalscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metainternalvalidation "k8s.io/apimachinery/pkg/apis/meta/internalversion/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	serjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"

	"github.com/kubeproof/kubeproof/impl/apiserver/audit"
	"github.com/kubeproof/kubeproof/impl/apiserver/codec"
	"github.com/kubeproof/kubeproof/impl/apiserver/request"
	"github.com/kubeproof/kubeproof/impl/storage"
)

// checkResourceVersion rejects a resourceVersion that is not a revision.
func checkResourceVersion(rv string) error {
	if rv == "" {
		return nil
	}
	if _, err := strconv.ParseUint(rv, 10, 64); err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("invalid resource version: resourceVersion: Invalid value: %q: %v", rv, err))
	}
	return nil
}

func (h *Handler) get(w http.ResponseWriter, r *http.Request, info *request.Info) error {
	target, err := h.opts.Codecs.Negotiate(r, objectConversions, false)
	if err != nil {
		return err
	}
	topts, err := tableOptions(r)
	if err != nil {
		return err
	}
	rv := r.URL.Query().Get("resourceVersion")
	if err := checkResourceVersion(rv); err != nil {
		return err
	}
	key, err := h.objectKey(info.Namespace, info.Name)
	if err != nil {
		return err
	}
	out := h.res.New()
	if err := h.store.Get(r.Context(), key, storage.GetOptions{ResourceVersion: rv}, out); err != nil {
		return err
	}
	obj, err := h.render(r.Context(), target, out, topts)
	if err != nil {
		return err
	}
	writeResponse(w, r, target, http.StatusOK, obj)
	return nil
}

// listOptions parses and validates the query of a list or watch.
func (h *Handler) listOptions(r *http.Request, info *request.Info, watch bool) (*internalversion.ListOptions, storage.ListOptions, error) {
	opts := &internalversion.ListOptions{}
	if err := metainternalscheme.ParameterCodec.DecodeParameters(r.URL.Query(), metav1.SchemeGroupVersion, opts); err != nil {
		return nil, storage.ListOptions{}, apierrors.NewBadRequest(err.Error())
	}
	if watch {
		opts.Watch = true
	}
	if errs := metainternalvalidation.ValidateListOptions(opts, true); len(errs) > 0 {
		return nil, storage.ListOptions{}, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "ListOptions"}, "", errs)
	}
	if err := checkResourceVersion(opts.ResourceVersion); err != nil {
		return nil, storage.ListOptions{}, err
	}
	if opts.LabelSelector == nil {
		opts.LabelSelector = labels.Everything()
	}
	if opts.FieldSelector == nil {
		opts.FieldSelector = fields.Everything()
	}
	for _, req := range opts.FieldSelector.Requirements() {
		if !h.fieldLabels[req.Field] {
			return nil, storage.ListOptions{}, apierrors.NewBadRequest(fmt.Sprintf("field label not supported: %s", req.Field))
		}
	}
	if info.Name != "" {
		// A watch on one object is a watch with a name field selector.
		opts.FieldSelector = fields.AndSelectors(opts.FieldSelector, fields.OneTermEqualSelector("metadata.name", info.Name))
	}
	if opts.Limit < 0 {
		opts.Limit = 0
	}
	sopts := storage.ListOptions{
		ResourceVersion:      opts.ResourceVersion,
		ResourceVersionMatch: opts.ResourceVersionMatch,
		Predicate: storage.SelectionPredicate{
			Label: opts.LabelSelector, Field: opts.FieldSelector, GetAttrs: h.res.Strategy.GetAttrs,
			Limit: opts.Limit, Continue: opts.Continue, AllowWatchBookmarks: opts.AllowWatchBookmarks,
		},
		Recursive:         true,
		SendInitialEvents: opts.SendInitialEvents,
	}
	return opts, sopts, nil
}

func (h *Handler) list(w http.ResponseWriter, r *http.Request, info *request.Info) error {
	target, err := h.opts.Codecs.Negotiate(r, listConversions, false)
	if err != nil {
		return err
	}
	topts, err := tableOptions(r)
	if err != nil {
		return err
	}
	_, sopts, err := h.listOptions(r, info, false)
	if err != nil {
		return err
	}
	key, err := h.listKey(info.Namespace)
	if err != nil {
		return err
	}
	list := h.res.NewList()
	if err := h.store.GetList(r.Context(), key, sopts, list); err != nil {
		return err
	}
	obj, err := h.render(r.Context(), target, list, topts)
	if err != nil {
		return err
	}
	audit.LogResponseObject(r.Context())
	writeList(w, h.opts.Codecs.Scheme, target, obj)
	return nil
}

// writeList writes a list response. JSON and protobuf lists with items
// (the kind's list, PartialObjectMetadataList) are encoded item by item
// into a small buffer flushed to the client as it fills, with
// apimachinery's streaming collection encoders, so the whole encoded body
// is never held in memory; the bytes are the ones the plain serializers
// write. Tables and YAML go through writeRaw.
func writeList(w http.ResponseWriter, scheme *runtime.Scheme, target codec.Target, obj runtime.Object) {
	enc := streamingEncoder(scheme, target.MediaType)
	if enc == nil || !meta.IsListType(obj) {
		writeRaw(w, target, http.StatusOK, obj)
		return
	}
	w.Header().Set("Content-Type", target.ContentType)
	w.WriteHeader(http.StatusOK)
	bw := listWriterPool.Get().(*bufio.Writer)
	bw.Reset(w)
	defer func() {
		bw.Reset(nil)
		listWriterPool.Put(bw)
	}()
	if err := enc.Encode(obj, bw); err != nil {
		slog.Debug("writing list response", "err", err)
		return
	}
	if err := bw.Flush(); err != nil {
		slog.Debug("writing list response", "err", err)
	}
}

// listWriterPool holds the buffers list responses are written through.
var listWriterPool = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 32<<10) }}

// streamingEncoders are the streaming JSON and protobuf serializers of a
// scheme, by scheme.
var streamingEncoders sync.Map // *runtime.Scheme → map[string]runtime.Encoder

func streamingEncoder(scheme *runtime.Scheme, mediaType string) runtime.Encoder {
	if scheme == nil {
		return nil
	}
	encs, ok := streamingEncoders.Load(scheme)
	if !ok {
		encs, _ = streamingEncoders.LoadOrStore(scheme, map[string]runtime.Encoder{
			codec.JSON: serjson.NewSerializerWithOptions(serjson.DefaultMetaFactory, scheme, scheme,
				serjson.SerializerOptions{StreamingCollectionsEncoding: true}),
			codec.Protobuf: protobuf.NewSerializerWithOptions(scheme, scheme,
				protobuf.SerializerOptions{StreamingCollectionsEncoding: true}),
		})
	}
	return encs.(map[string]runtime.Encoder)[mediaType]
}
