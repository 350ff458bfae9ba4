package endpoints

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeproof/kubeproof/impl/apiserver/codec"
)

const metaGroup = "meta.k8s.io"

func conversions(as ...string) []codec.Conversion {
	var out []codec.Conversion
	for _, a := range as {
		for _, v := range []string{"v1", "v1beta1"} {
			out = append(out, codec.Conversion{As: a, Group: metaGroup, Version: v})
		}
	}
	return out
}

var (
	objectConversions = conversions("Table", "PartialObjectMetadata")
	listConversions   = conversions("Table", "PartialObjectMetadataList")
)

// tableOptions reads includeObject (None, Metadata or Object; default
// Metadata).
func tableOptions(r *http.Request) (*metav1.TableOptions, error) {
	v := metav1.IncludeObjectPolicy(r.URL.Query().Get("includeObject"))
	switch v {
	case "":
		v = metav1.IncludeMetadata
	case metav1.IncludeNone, metav1.IncludeMetadata, metav1.IncludeObject:
	default:
		return nil, apierrors.NewBadRequest(fmt.Sprintf("unrecognized includeObject value: %q", v))
	}
	return &metav1.TableOptions{IncludeObject: v}, nil
}

// transformTimer times the making of a response object from what the
// storage returned (its kind stamped, a subresource's view, a Status, a
// Table...): the returned func, called once it is made, adds the time to
// the request's transform-response-object latency, as kube-apiserver
// tracks its transformResponseObject for every answer.
func transformTimer(target codec.Target) func() {
	if target.Latency == nil {
		return func() {}
	}
	start := time.Now()
	return func() { target.Latency.AddTransform(time.Since(start)) }
}

// render turns a stored object or list into what target asks for: the
// object itself (kind stamped), a Table, or PartialObjectMetadata[List].
// Its time is the request's transform-response-object latency.
func (h *Handler) render(ctx context.Context, target codec.Target, obj runtime.Object, topts *metav1.TableOptions) (runtime.Object, error) {
	defer transformTimer(target)()
	switch target.As {
	case "":
		if err := h.opts.Codecs.SetKind(obj, h.res.GroupVersion); err != nil {
			return nil, err
		}
		return obj, nil
	case "Table":
		return h.asTable(ctx, target, obj, topts)
	case "PartialObjectMetadata":
		return partialMetadata(obj, target.Version), nil
	case "PartialObjectMetadataList":
		return partialMetadataList(obj, target.Version)
	}
	return nil, &codec.NotAcceptableError{}
}

func partialMetadata(obj runtime.Object, version string) *metav1.PartialObjectMetadata {
	m := accessor(obj)
	out := &metav1.PartialObjectMetadata{}
	if om, ok := m.(*metav1.ObjectMeta); ok {
		out.ObjectMeta = *om
	} else {
		out.ObjectMeta = metav1.ObjectMeta{
			Name: m.GetName(), Namespace: m.GetNamespace(), UID: m.GetUID(),
			ResourceVersion: m.GetResourceVersion(), Labels: m.GetLabels(), Annotations: m.GetAnnotations(),
			CreationTimestamp: m.GetCreationTimestamp(), DeletionTimestamp: m.GetDeletionTimestamp(),
			Finalizers: m.GetFinalizers(), OwnerReferences: m.GetOwnerReferences(), Generation: m.GetGeneration(),
		}
	}
	out.SetGroupVersionKind(schema.GroupVersionKind{Group: metaGroup, Version: version, Kind: "PartialObjectMetadata"})
	return out
}

func partialMetadataList(list runtime.Object, version string) (runtime.Object, error) {
	la, err := meta.ListAccessor(list)
	if err != nil {
		return nil, err
	}
	out := &metav1.PartialObjectMetadataList{}
	out.ResourceVersion = la.GetResourceVersion()
	out.Continue = la.GetContinue()
	out.RemainingItemCount = la.GetRemainingItemCount()
	err = meta.EachListItem(list, func(o runtime.Object) error {
		p := partialMetadata(o, version)
		p.TypeMeta = metav1.TypeMeta{}
		out.Items = append(out.Items, *p)
		return nil
	})
	if err != nil {
		return nil, err
	}
	out.SetGroupVersionKind(schema.GroupVersionKind{Group: metaGroup, Version: version, Kind: "PartialObjectMetadataList"})
	return out, nil
}

// asTable renders obj (an object or a list) with the strategy's table
// convertor and fills each row's object as includeObject asks.
func (h *Handler) asTable(ctx context.Context, target codec.Target, obj runtime.Object, topts *metav1.TableOptions) (runtime.Object, error) {
	if topts == nil {
		topts = &metav1.TableOptions{IncludeObject: metav1.IncludeMetadata}
	}
	tbl, err := h.res.Strategy.ConvertToTable(ctx, obj, topts)
	if err != nil {
		return nil, err
	}
	var items []runtime.Object
	if meta.IsListType(obj) {
		items, err = meta.ExtractList(obj)
		if err != nil {
			return nil, err
		}
		if la, err := meta.ListAccessor(obj); err == nil {
			if tbl.ResourceVersion == "" {
				tbl.ResourceVersion = la.GetResourceVersion()
			}
			if tbl.Continue == "" {
				tbl.Continue = la.GetContinue()
			}
			if tbl.RemainingItemCount == nil {
				tbl.RemainingItemCount = la.GetRemainingItemCount()
			}
		}
	} else {
		items = []runtime.Object{obj}
		if tbl.ResourceVersion == "" {
			tbl.ResourceVersion = accessor(obj).GetResourceVersion()
		}
	}
	for i := range tbl.Rows {
		row := &tbl.Rows[i]
		src := row.Object.Object
		if src == nil && len(row.Object.Raw) == 0 && len(tbl.Rows) == len(items) {
			src = items[i]
		}
		row.Object = runtime.RawExtension{}
		if src == nil {
			continue
		}
		var embed runtime.Object
		switch topts.IncludeObject {
		case metav1.IncludeNone:
			continue
		case metav1.IncludeObject:
			if err := h.opts.Codecs.SetKind(src, h.res.GroupVersion); err != nil {
				return nil, err
			}
			embed = src
		default:
			embed = partialMetadata(src, target.Version)
		}
		var buf bytes.Buffer
		if err := target.Info.Serializer.Encode(embed, &buf); err != nil {
			return nil, fmt.Errorf("encoding table row: %w", err)
		}
		row.Object.Raw = bytes.TrimRight(buf.Bytes(), "\n")
	}
	if topts.NoHeaders {
		tbl.ColumnDefinitions = nil
	}
	tbl.SetGroupVersionKind(schema.GroupVersionKind{Group: metaGroup, Version: target.Version, Kind: "Table"})
	return tbl, nil
}
