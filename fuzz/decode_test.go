package fuzz

import (
	"bytes"
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/randfill/bytesource"

	"github.com/kubeproof/kubeproof/impl/apiserver/codec"
	"github.com/kubeproof/kubeproof/impl/apiserver/resource"
)

// bodyFormats are the media types request bodies may be in.
var bodyFormats = []string{codec.JSON, codec.YAML, codec.Protobuf}

// FuzzDecode feeds request bodies of every served kind, in every body
// format, through the server's decoder (fieldValidation=Strict and Ignore,
// as the handlers do), then defaulting, PrepareForCreate, validation,
// selectable fields and table rendering. Properties:
//   - nothing panics;
//   - decode → encode → decode gives a semantically equal object, and the
//     second encoding is byte-identical to the first (before and after
//     defaulting);
//   - defaulting is idempotent.
//
// With structured set the body is not the fuzzer's bytes but an object of
// the kind filled by randfill with apimachinery's fuzzer functions, driven
// by the fuzzer's bytes, then encoded in the chosen format.
func FuzzDecode(f *testing.F) {
	rs, c := served()
	for i, r := range rs {
		for fi, mt := range bodyFormats {
			body, err := encodeAs(c, mt, decodeTemplate(f, r, "fuzz", "seed"))
			if err != nil {
				f.Fatalf("encoding seed %s as %s: %v", r.Name, mt, err)
			}
			f.Add(uint8(i), uint8(fi), false, body)
			f.Add(uint8(i), uint8(fi), true, []byte(r.Name+mt))
		}
	}
	f.Fuzz(decodeOne)
}

// decodeOne is FuzzDecode's body.
func decodeOne(t *testing.T, kind, format uint8, structured bool, data []byte) {
	rs, c := served()
	{
		r := rs[int(kind)%len(rs)]
		mt := bodyFormats[int(format)%len(bodyFormats)]
		body := data
		if structured {
			obj := r.New()
			fuzzer.FuzzerFor(fillFuncs, bytesource.New(data), c.Factory).NilChance(0.3).NumElements(0, 2).Fill(obj)
			b, err := encodeAs(c, mt, obj)
			if err != nil {
				// randfill with the meta fuzzer functions should always
				// give marshalable objects; it is not a server bug if not.
				t.Skipf("randfill object does not encode: %v", err)
			}
			body = b
		}
		for _, strict := range []bool{true, false} {
			obj, err := decodeBody(c, r, mt, body, strict)
			if err != nil {
				continue
			}
			checkRoundTrip(t, c, r, mt, obj)
			ctx := context.Background()
			r.Strategy.Default(obj)
			again := obj.DeepCopyObject()
			r.Strategy.Default(again)
			if !apiequality.Semantic.DeepEqual(obj, again) {
				t.Fatalf("%s: defaulting is not idempotent", r.Name)
			}
			checkRoundTrip(t, c, r, mt, obj)
			old := obj.DeepCopyObject()
			r.Strategy.PrepareForCreate(ctx, obj)
			_ = r.Strategy.Validate(ctx, obj)
			_ = r.Strategy.ValidateUpdate(ctx, obj, old)
			if r.Status != nil {
				_ = r.Status.ValidateUpdate(ctx, obj, old)
			}
			if _, _, err := r.Strategy.GetAttrs(obj); err != nil {
				t.Fatalf("%s: GetAttrs: %v", r.Name, err)
			}
			if _, err := r.Strategy.ConvertToTable(ctx, obj, &metav1.TableOptions{}); err != nil {
				t.Fatalf("%s: ConvertToTable: %v", r.Name, err)
			}
		}
	}
}

// decodeBody decodes body as the create handler does: the media type's
// strict serializer (or the lenient one), into a new object of r's kind,
// refusing another kind. A strict-decoding error still yields the object
// (the server turns it into warnings under fieldValidation=Warn).
func decodeBody(c *codec.Codecs, r *resource.Resource, mediaType string, body []byte, strict bool) (runtime.Object, error) {
	info, err := c.RequestSerializer(mediaType)
	if err != nil {
		return nil, err
	}
	dec := info.Serializer
	if strict && info.StrictSerializer != nil {
		dec = info.StrictSerializer
	}
	obj, gvk, err := dec.Decode(body, gvkOf(r), r.New())
	if err != nil {
		if _, ok := runtime.AsStrictDecodingError(err); !ok || obj == nil {
			return nil, err
		}
	}
	if gvk == nil || *gvk != r.GroupVersionKind() {
		return nil, errWrongKind
	}
	if _, ok := obj.(interface{ GetName() string }); !ok {
		return nil, errWrongKind
	}
	return obj, nil
}

type wrongKind struct{}

func (wrongKind) Error() string { return "body is of another kind" }

var errWrongKind error = wrongKind{}

// encodeAs encodes obj (stamped with its kind) in mediaType.
func encodeAs(c *codec.Codecs, mediaType string, obj runtime.Object) ([]byte, error) {
	if err := c.SetKind(obj, schemaGV(obj, c)); err != nil {
		return nil, err
	}
	info, err := c.RequestSerializer(mediaType)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := info.Serializer.Encode(obj, &buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// checkRoundTrip encodes obj in mediaType, decodes it again and requires a
// semantically equal object whose own encoding is byte-identical.
func checkRoundTrip(t *testing.T, c *codec.Codecs, r *resource.Resource, mediaType string, obj runtime.Object) {
	t.Helper()
	obj = obj.DeepCopyObject()
	b1, err := encodeAs(c, mediaType, obj)
	if err != nil {
		t.Fatalf("%s: encoding a decoded object as %s: %v", r.Name, mediaType, err)
	}
	obj2, err := decodeBody(c, r, mediaType, b1, false)
	if err != nil {
		t.Fatalf("%s: decoding our own %s encoding: %v\n%q", r.Name, mediaType, err, b1)
	}
	if !apiequality.Semantic.DeepEqual(obj, obj2) {
		t.Fatalf("%s: %s round trip changed the object:\nbefore %#v\nafter  %#v", r.Name, mediaType, obj, obj2)
	}
	b2, err := encodeAs(c, mediaType, obj2)
	if err != nil {
		t.Fatalf("%s: re-encoding as %s: %v", r.Name, mediaType, err)
	}
	if !bytes.Equal(b1, b2) {
		t.Fatalf("%s: %s encoding is not stable:\nfirst  %q\nsecond %q", r.Name, mediaType, b1, b2)
	}
}
