package codec

import (
	"bytes"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// RequestObjectJSON returns the encoder of obj, decoded from a request
// body of group version gv, as an audit event's requestObject:
// kube-apiserver records the object its decoder produced (defaulted, as
// its decoder defaults every object it decodes: defaults, when not nil),
// encoded again as JSON in the body's group version. The encoder works on
// a copy, made only when it is called (the request is audited at the
// Request level or above): the handler goes on with obj as it is.
func (c *Codecs) RequestObjectJSON(obj runtime.Object, gv schema.GroupVersion, defaults func(runtime.Object)) func(omitManagedFields bool) ([]byte, error) {
	return func(omitManagedFields bool) ([]byte, error) {
		cp := obj.DeepCopyObject()
		if defaults != nil {
			defaults(cp)
		}
		if omitManagedFields {
			if m, err := meta.Accessor(cp); err == nil {
				m.SetManagedFields(nil)
			}
		}
		if err := c.SetKind(cp, gv); err != nil {
			return nil, err
		}
		info, ok := runtime.SerializerInfoForMediaType(c.Factory.SupportedMediaTypes(), runtime.ContentTypeJSON)
		if !ok {
			return nil, fmt.Errorf("no %s serializer", runtime.ContentTypeJSON)
		}
		var buf bytes.Buffer
		if err := info.Serializer.Encode(cp, &buf); err != nil {
			return nil, fmt.Errorf("encoding %T: %w", cp, err)
		}
		return bytes.TrimRight(buf.Bytes(), "\n"), nil
	}
}

// ProtobufJSON returns a Kubernetes protobuf response body (the magic,
// then the envelope naming the kind) as JSON, for an audit event's
// responseObject: kube-apiserver records the object it answered with
// encoded as JSON in the response's group version, whatever the wire
// format the client asked for.
func (c *Codecs) ProtobufJSON(body []byte) ([]byte, error) {
	pb, ok := c.info(Protobuf)
	if !ok {
		return nil, fmt.Errorf("no %s serializer", Protobuf)
	}
	obj, gvk, err := pb.Serializer.Decode(body, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("decoding a protobuf response: %w", err)
	}
	obj.GetObjectKind().SetGroupVersionKind(*gvk)
	js, ok := runtime.SerializerInfoForMediaType(c.Factory.SupportedMediaTypes(), runtime.ContentTypeJSON)
	if !ok {
		return nil, fmt.Errorf("no %s serializer", runtime.ContentTypeJSON)
	}
	var buf bytes.Buffer
	if err := js.Serializer.Encode(obj, &buf); err != nil {
		return nil, fmt.Errorf("encoding %s as JSON: %w", gvk.Kind, err)
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}
