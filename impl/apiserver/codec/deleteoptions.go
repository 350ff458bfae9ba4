package codec

import (
	"bytes"
	"fmt"

	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// deleteOptionsGVK is the kind a DeleteOptions body without apiVersion or
// kind is taken for.
var deleteOptionsGVK = metav1.SchemeGroupVersion.WithKind("DeleteOptions")

// DecodeDeleteOptions decodes the body of a delete or deletecollection,
// of media type mediaType (one RequestSerializer accepted), into into, as
// kube-apiserver's delete handlers do: with the meta.k8s.io internal
// version's codecs, where DeleteOptions is an unversioned kind, so a body
// of any group version (v1, apps/v1, meta.k8s.io/v1, a custom resource's)
// decodes, and one without apiVersion or kind is meta.k8s.io/v1. It
// returns the body's group version. A body of another kind, or one that
// does not decode, is an error (the decoder's).
func DecodeDeleteOptions(mediaType string, body []byte, into *metav1.DeleteOptions) (schema.GroupVersion, error) {
	info, ok := runtime.SerializerInfoForMediaType(metainternalversionscheme.Codecs.SupportedMediaTypes(), mediaType)
	if !ok {
		return schema.GroupVersion{}, fmt.Errorf("no %s serializer for DeleteOptions", mediaType)
	}
	def := deleteOptionsGVK
	dec := metainternalversionscheme.Codecs.DecoderToVersion(info.Serializer, def.GroupVersion())
	obj, gvk, err := dec.Decode(body, &def, into)
	if err != nil {
		return schema.GroupVersion{}, err
	}
	if obj != runtime.Object(into) {
		return schema.GroupVersion{}, fmt.Errorf("decoded object cannot be converted to DeleteOptions")
	}
	var gv schema.GroupVersion
	if gvk != nil {
		gv = gvk.GroupVersion()
	}
	return gv, nil
}

// DeleteOptionsJSON returns the encoder of opts, decoded from a body of
// group version gv, as an audit event's requestObject: kube-apiserver
// encodes it as JSON with the meta.k8s.io internal version's codecs, which
// stamp an unversioned kind with its first registered group version
// whatever gv is, so the event reads "apiVersion":"meta.k8s.io/__internal".
// The encoder works on opts as it is when called; DeleteOptions has no
// managedFields to omit.
func DeleteOptionsJSON(opts *metav1.DeleteOptions, gv schema.GroupVersion) func(omitManagedFields bool) ([]byte, error) {
	return func(bool) ([]byte, error) {
		info, ok := runtime.SerializerInfoForMediaType(metainternalversionscheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
		if !ok {
			return nil, fmt.Errorf("no %s serializer", runtime.ContentTypeJSON)
		}
		var buf bytes.Buffer
		if err := metainternalversionscheme.Codecs.EncoderForVersion(info.Serializer, gv).Encode(opts, &buf); err != nil {
			return nil, fmt.Errorf("encoding DeleteOptions: %w", err)
		}
		return bytes.TrimRight(buf.Bytes(), "\n"), nil
	}
}
