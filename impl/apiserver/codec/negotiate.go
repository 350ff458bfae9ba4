package codec

import (
	"fmt"
	"net/http"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubeproof/kubeproof/impl/internal/reqlatency"
)

// Target is what a response is rendered as: the serializer for a media type
// plus the "as" conversion requested (Table, PartialObjectMetadata[List],
// APIGroupDiscoveryList) with its group version.
type Target struct {
	// MediaType is the bare media type (application/json, ...).
	MediaType string
	// ContentType is the Content-Type header to send.
	ContentType string
	Info        runtime.SerializerInfo
	// As, Group, Version come from the accepted type's as=, g=, v= params.
	As, Group, Version string
	// Latency is the request's latency trackers (nil when untracked): a
	// response's serialization is added to them.
	Latency *reqlatency.Trackers
}

// Conversion is an "as=" conversion a handler can produce.
type Conversion struct {
	As, Group, Version string
}

// NotAcceptableError is returned when no accepted type can be produced.
type NotAcceptableError struct{ Accepted []string }

func (e *NotAcceptableError) Error() string {
	return fmt.Sprintf("only the following media types are accepted: %s", joinComma(e.Accepted))
}

// UnsupportedMediaTypeError is returned for a request body in a media type
// the server does not read.
type UnsupportedMediaTypeError struct {
	Type     string
	Accepted []string
}

func (e *UnsupportedMediaTypeError) Error() string {
	return fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: %s", joinComma(e.Accepted))
}

func joinComma(s []string) string {
	out := ""
	for i, v := range s {
		if i > 0 {
			out += ", "
		}
		out += v
	}
	return out
}

// supportedTypes lists the plain media types responses can be in.
func (c *Codecs) supportedTypes() []string {
	var out []string
	for _, i := range c.Factory.SupportedMediaTypes() {
		if i.MediaType == JSON || i.MediaType == YAML || i.MediaType == Protobuf {
			out = append(out, i.MediaType)
		}
	}
	return out
}

func (c *Codecs) info(mediaType string) (runtime.SerializerInfo, bool) {
	for _, i := range c.Factory.SupportedMediaTypes() {
		if i.MediaType == mediaType {
			return i, true
		}
	}
	return runtime.SerializerInfo{}, false
}

// Negotiate picks the response target for the Accept header of r. allowed
// lists the "as=" conversions the endpoint can produce; an accepted type
// asking for another conversion is skipped. A type without "as" is always
// allowed. The YAML type is not offered for streams (stream=true).
func (c *Codecs) Negotiate(r *http.Request, allowed []Conversion, stream bool) (Target, error) {
	for _, a := range ParseAccept(r.Header.Get("Accept")) {
		as, g, v := a.Params["as"], a.Params["g"], a.Params["v"]
		if as != "" && !conversionAllowed(allowed, as, g, v) {
			continue
		}
		if as == "" && (g != "" || v != "") {
			continue
		}
		for _, mt := range []string{JSON, Protobuf, YAML} {
			if !a.matches(mt) {
				continue
			}
			if stream && mt == YAML {
				continue
			}
			if as != "" && mt == YAML {
				// kube-apiserver serves Table and friends as JSON and protobuf.
				continue
			}
			info, ok := c.info(mt)
			if !ok {
				continue
			}
			ct := mt
			if as != "" {
				ct = fmt.Sprintf("%s;as=%s;g=%s;v=%s", mt, as, g, v)
			}
			return Target{MediaType: mt, ContentType: ct, Info: info, As: as, Group: g, Version: v,
				Latency: reqlatency.From(r.Context())}, nil
		}
	}
	return Target{}, &NotAcceptableError{Accepted: c.supportedTypes()}
}

func conversionAllowed(allowed []Conversion, as, g, v string) bool {
	for _, c := range allowed {
		if c.As == as && c.Group == g && c.Version == v {
			return true
		}
	}
	return false
}

// RequestSerializer returns the serializer for a request body's
// Content-Type (JSON when absent).
func (c *Codecs) RequestSerializer(contentType string) (runtime.SerializerInfo, error) {
	mt := JSON
	if _, exact := c.info(contentType); exact {
		// The common case, a bare supported type: what parsing would
		// give, without building it again.
		mt = contentType
	} else if contentType != "" {
		m, ok := ParseMediaType(contentType)
		if !ok {
			return runtime.SerializerInfo{}, &UnsupportedMediaTypeError{Type: contentType, Accepted: c.supportedTypes()}
		}
		mt = m.Full()
	}
	info, ok := c.info(mt)
	if !ok {
		return runtime.SerializerInfo{}, &UnsupportedMediaTypeError{Type: contentType, Accepted: c.supportedTypes()}
	}
	if mt == Protobuf && c.protobufBodies != nil {
		return *c.protobufBodies, nil
	}
	return info, nil
}
