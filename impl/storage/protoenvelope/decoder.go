// Package protoenvelope decodes Kubernetes' protobuf encoding — the
// "k8s\x00" magic, then a runtime.Unknown envelope whose raw field holds
// the object — straight from the envelope's bytes into the target object.
// apimachinery's protobuf serializer first unmarshals the whole envelope,
// copying the object's bytes into the Unknown, then unmarshals those; the
// copy is a whole object per decode, and the API server decodes every
// written object twice (the request body and the stored bytes read back)
// and once more for the watch cache.
//
// The short road is taken only for the plain case (a registered typed
// object to decode into, an envelope with nothing but its type meta, raw
// bytes and content type/encoding, each once); anything else, and any
// error on the way, goes to the wrapped serializer from the start, so the
// results and the errors are always the serializer's.
package protoenvelope

import (
	"bytes"
	"unsafe"

	"google.golang.org/protobuf/encoding/protowire"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// magic starts every protobuf-encoded Kubernetes object.
var magic = []byte{0x6b, 0x38, 0x73, 0x00}

// Decoder is a protobuf serializer whose Decode takes the short road when
// it can. It is a runtime.Serializer (and a recognizer.RecognizingDecoder
// when the wrapped serializer is one), so it can stand wherever the
// serializer stood.
type Decoder struct {
	runtime.Serializer
	typer runtime.ObjectTyper
}

// recognizing is what a recognizer needs of a decoder.
type recognizing interface {
	RecognizesData(data []byte) (ok, unknown bool, err error)
}

// RecognizingDecoder is a Decoder that also says which data it decodes.
type RecognizingDecoder struct {
	Decoder
}

// RecognizesData implements recognizer.RecognizingDecoder.
func (d RecognizingDecoder) RecognizesData(data []byte) (ok, unknown bool, err error) {
	return d.Serializer.(recognizing).RecognizesData(data)
}

// New wraps pb, apimachinery's protobuf serializer built on typer (the
// scheme). The result recognizes data when pb does.
func New(pb runtime.Serializer, typer runtime.ObjectTyper) runtime.Serializer {
	d := Decoder{Serializer: pb, typer: typer}
	if _, ok := pb.(recognizing); ok {
		return RecognizingDecoder{d}
	}
	return d
}

// unmarshaler is what generated Kubernetes types implement.
type unmarshaler interface {
	Reset()
	Unmarshal([]byte) error
}

// Decode implements runtime.Decoder.
func (d Decoder) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	if gvk, ok := d.decodeInto(data, defaults, into); ok {
		return into, gvk, nil
	}
	return d.Serializer.Decode(data, defaults, into)
}

// decodeInto is the short road: false when it does not apply or anything
// fails (into may then be half-written; the serializer resets it).
func (d Decoder) decodeInto(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (*schema.GroupVersionKind, bool) {
	if into == nil || len(data) <= len(magic) || !bytes.HasPrefix(data, magic) {
		return nil, false
	}
	if _, ok := into.(*runtime.Unknown); ok {
		return nil, false
	}
	u, ok := into.(unmarshaler)
	if !ok {
		return nil, false
	}
	env, ok := parseEnvelope(data[len(magic):])
	if !ok {
		return nil, false
	}
	// The kind the serializer settles on: the data's, completed from the
	// caller's defaults, then from into's registered kind.
	actual := env.typeMeta.GroupVersionKind()
	copyKindDefaults(&actual, defaults)
	kinds, _, err := d.typer.ObjectKinds(into)
	if err != nil || len(kinds) == 0 {
		return nil, false
	}
	copyKindDefaults(&actual, &kinds[0])
	if actual.Version == "" && actual.Group == "" {
		actual.Group = kinds[0].Group
	}
	if actual.Kind == "" || actual.Version == "" {
		return nil, false
	}
	// The serializer decodes into into only when actual is one of its
	// kinds (else it makes a new object of kind actual). From here on
	// actual is that kind's value: equal strings, but the scheme's, not
	// views of data (see parseTypeMeta).
	found := false
	for _, k := range kinds {
		if k == actual {
			actual, found = k, true
			break
		}
	}
	if !found {
		return nil, false
	}
	u.Reset()
	if err := u.Unmarshal(env.raw); err != nil {
		return nil, false
	}
	into.GetObjectKind().SetGroupVersionKind(actual)
	return &actual, true
}

// copyKindDefaults fills dst's missing kind and version from src, as the
// protobuf serializer does.
func copyKindDefaults(dst, src *schema.GroupVersionKind) {
	if src == nil {
		return
	}
	if dst.Kind == "" {
		dst.Kind = src.Kind
	}
	if dst.Version == "" && src.Version != "" {
		dst.Group = src.Group
		dst.Version = src.Version
	}
}

// envelope is a parsed runtime.Unknown; raw and the type meta's strings
// alias the input.
type envelope struct {
	typeMeta runtime.TypeMeta
	raw      []byte
}

// runtime.Unknown's and runtime.TypeMeta's field numbers.
const (
	unknownTypeMeta        = 1
	unknownRaw             = 2
	unknownContentEncoding = 3
	unknownContentType     = 4
	typeMetaAPIVersion     = 1
	typeMetaKind           = 2
)

// parseEnvelope reads an Unknown whose fields are each length-delimited
// and present at most once, and whose type meta has only apiVersion and
// kind, each at most once. Anything else is false.
func parseEnvelope(b []byte) (envelope, bool) {
	var env envelope
	var seen [unknownContentType + 1]bool
	for len(b) > 0 {
		num, val, rest, ok := field(b)
		if !ok || num < unknownTypeMeta || num > unknownContentType || seen[num] {
			return envelope{}, false
		}
		seen[num] = true
		b = rest
		switch num {
		case unknownTypeMeta:
			if env.typeMeta, ok = parseTypeMeta(val); !ok {
				return envelope{}, false
			}
		case unknownRaw:
			env.raw = val
		}
		// Content encoding and type are not looked at by the serializer
		// when decoding into a typed object.
	}
	return env, true
}

// parseTypeMeta returns the type meta with its strings viewing b, not
// copied: decodeInto only compares them with the scheme's kinds and keeps
// the scheme's strings, so nothing that outlives the call refers to b (the
// data is often a pooled buffer).
func parseTypeMeta(b []byte) (runtime.TypeMeta, bool) {
	var tm runtime.TypeMeta
	var seen [typeMetaKind + 1]bool
	for len(b) > 0 {
		num, val, rest, ok := field(b)
		if !ok || num < typeMetaAPIVersion || num > typeMetaKind || seen[num] {
			return runtime.TypeMeta{}, false
		}
		seen[num] = true
		b = rest
		if num == typeMetaAPIVersion {
			tm.APIVersion = unsafe.String(unsafe.SliceData(val), len(val))
		} else {
			tm.Kind = unsafe.String(unsafe.SliceData(val), len(val))
		}
	}
	return tm, true
}

// field reads one length-delimited field.
func field(b []byte) (num protowire.Number, val, rest []byte, ok bool) {
	num, typ, n := protowire.ConsumeTag(b)
	if n < 0 || typ != protowire.BytesType {
		return 0, nil, nil, false
	}
	val, m := protowire.ConsumeBytes(b[n:])
	if m < 0 {
		return 0, nil, nil, false
	}
	return num, val, b[n+m:], true
}
