// Package codec holds the API server's runtime.Scheme and serializers and
// negotiates request and response media types (JSON, YAML, protobuf, and the
// Table / PartialObjectMetadata / discovery "as=" variants).
package codec

import (
	"fmt"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	apidiscoveryv2beta1 "k8s.io/api/apidiscovery/v2beta1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1beta1 "k8s.io/apimachinery/pkg/apis/meta/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	clientscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/kubeproof/kubeproof/impl/storage/protoenvelope"
)

// Codecs is a scheme plus the serializers built on it.
type Codecs struct {
	Scheme  *runtime.Scheme
	Factory serializer.CodecFactory
	// ParameterCodec decodes query parameters into versioned option structs.
	ParameterCodec runtime.ParameterCodec
	// protobufBodies decodes protobuf request bodies: the factory's
	// protobuf serializer info, its serializers decoding straight from the
	// envelope (protoenvelope).
	protobufBodies *runtime.SerializerInfo
}

// New builds a fresh scheme holding every built-in API group client-go knows,
// the meta.k8s.io types (Status, WatchEvent, Table, PartialObjectMetadata in
// v1 and v1beta1), and its codec factory. client-go's global scheme is not
// touched.
func New() (*Codecs, error) {
	s := runtime.NewScheme()
	if err := clientscheme.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("registering built-in API groups: %w", err)
	}
	if err := apidiscoveryv2.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("registering apidiscovery.k8s.io/v2: %w", err)
	}
	if err := apidiscoveryv2beta1.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("registering apidiscovery.k8s.io/v2beta1: %w", err)
	}
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	if err := metav1.AddMetaToScheme(s); err != nil {
		return nil, fmt.Errorf("registering meta.k8s.io/v1: %w", err)
	}
	if err := metav1beta1.AddMetaToScheme(s); err != nil {
		return nil, fmt.Errorf("registering meta.k8s.io/v1beta1: %w", err)
	}
	c := &Codecs{
		Scheme:         s,
		Factory:        serializer.NewCodecFactory(s),
		ParameterCodec: runtime.NewParameterCodec(s),
	}
	if info, ok := c.info(Protobuf); ok {
		info.Serializer = protoenvelope.New(info.Serializer, s)
		if info.StrictSerializer != nil {
			info.StrictSerializer = protoenvelope.New(info.StrictSerializer, s)
		}
		c.protobufBodies = &info
	}
	return c, nil
}

// SetKind stamps obj's apiVersion and kind from the scheme, preferring the
// group version gv when the type is registered in several.
func (c *Codecs) SetKind(obj runtime.Object, gv schema.GroupVersion) error {
	gvks, _, err := c.Scheme.ObjectKinds(obj)
	if err != nil {
		return fmt.Errorf("looking up kind of %T: %w", obj, err)
	}
	gvk := gvks[0]
	for _, k := range gvks {
		if k.GroupVersion() == gv {
			gvk = k
			break
		}
	}
	// Objects in watch events are shared between watchers (the watch
	// cache): write the kind only when it is not already the one wanted,
	// so that serving a shared object never writes to it.
	if obj.GetObjectKind().GroupVersionKind() != gvk {
		obj.GetObjectKind().SetGroupVersionKind(gvk)
	}
	return nil
}

// ListAccessor is meta.ListAccessor, re-exported for handlers.
var ListAccessor = meta.ListAccessor
