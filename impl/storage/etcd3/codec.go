package etcd3

import (
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/runtime/serializer/recognizer"
	"k8s.io/apimachinery/pkg/runtime/serializer/versioning"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/kubeproof/kubeproof/impl/storage/protoenvelope"
)

// NewCodec returns the codec objects are stored with, the way kube-apiserver
// stores them: protobuf (the "k8s\x00" magic followed by a runtime.Unknown
// envelope) in group/version gv. Kinds without protobuf support are stored
// as JSON. Decoding recognizes either encoding.
func NewCodec(s *runtime.Scheme, gv schema.GroupVersion) runtime.Codec {
	if s == nil {
		s = scheme.Scheme
	}
	pb := protobuf.NewSerializer(s, s)
	js := json.NewSerializerWithOptions(json.DefaultMetaFactory, s, s, json.SerializerOptions{})
	enc := fallbackEncoder{primary: pb, fallback: js}
	dec := recognizer.NewDecoder(protoenvelope.New(pb, s), js)
	return versioning.NewCodec(enc, dec, runtime.UnsafeObjectConvertor(s), s, s, nil,
		gv, gv, "etcd3")
}

// fallbackEncoder encodes with primary and, when the object does not
// implement protobuf marshalling, with fallback.
type fallbackEncoder struct {
	primary, fallback runtime.Encoder
}

func (e fallbackEncoder) Encode(obj runtime.Object, w io.Writer) error {
	if e.usesPrimary(obj) {
		return e.primary.Encode(obj, w)
	}
	if err := e.fallback.Encode(obj, w); err != nil {
		return fmt.Errorf("encoding %T as JSON: %w", obj, err)
	}
	return nil
}

// EncodeWithAllocator is Encode with the protobuf encoding's buffer taken
// from memAlloc (reused across writes instead of allocated per object).
func (e fallbackEncoder) EncodeWithAllocator(obj runtime.Object, w io.Writer, memAlloc runtime.MemoryAllocator) error {
	if pb, ok := e.primary.(runtime.EncoderWithAllocator); ok && e.usesPrimary(obj) {
		return pb.EncodeWithAllocator(obj, w, memAlloc)
	}
	return e.Encode(obj, w)
}

func (e fallbackEncoder) usesPrimary(obj runtime.Object) bool {
	if _, ok := obj.(protoMarshaler); ok {
		return true
	}
	_, ok := obj.(*runtime.Unknown)
	return ok
}

func (e fallbackEncoder) Identifier() runtime.Identifier {
	return runtime.Identifier("etcd3-proto-or-json")
}

type protoMarshaler interface {
	Marshal() ([]byte, error)
	Unmarshal([]byte) error
}
