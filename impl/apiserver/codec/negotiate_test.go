package codec

import (
	"errors"
	"net/http/httptest"
	"testing"
)

func TestNegotiate(t *testing.T) {
	c, err := New()
	if err != nil {
		t.Fatal(err)
	}
	table := []Conversion{{As: "Table", Group: "meta.k8s.io", Version: "v1"}}
	cases := []struct {
		accept      string
		allowed     []Conversion
		stream      bool
		wantType    string
		wantAs      string
		notAccepted bool
	}{
		{"", nil, false, JSON, "", false},
		{"*/*", nil, false, JSON, "", false},
		{"application/yaml", nil, false, YAML, "", false},
		{"application/yaml", nil, true, "", "", true},
		{"application/vnd.kubernetes.protobuf, */*", nil, false, Protobuf, "", false},
		{"application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json", table, false, JSON, "Table", false},
		{"application/json;as=Table;v=v1;g=meta.k8s.io,application/json", nil, false, JSON, "", false},
		{"application/json;as=Table;v=v1;g=meta.k8s.io", nil, false, "", "", true},
		{"text/html", nil, false, "", "", true},
		{"application/json;q=0.5,application/vnd.kubernetes.protobuf", nil, false, Protobuf, "", false},
	}
	for _, tc := range cases {
		r := httptest.NewRequest("GET", "/", nil)
		if tc.accept != "" {
			r.Header.Set("Accept", tc.accept)
		}
		got, err := c.Negotiate(r, tc.allowed, tc.stream)
		var na *NotAcceptableError
		if tc.notAccepted {
			if !errors.As(err, &na) {
				t.Errorf("%q: want NotAcceptableError, got %v (%s)", tc.accept, err, got.MediaType)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.accept, err)
			continue
		}
		if got.MediaType != tc.wantType || got.As != tc.wantAs {
			t.Errorf("%q: got %s as=%q, want %s as=%q", tc.accept, got.MediaType, got.As, tc.wantType, tc.wantAs)
		}
	}
}

func TestRequestSerializer(t *testing.T) {
	c, err := New()
	if err != nil {
		t.Fatal(err)
	}
	for _, ct := range []string{"", "application/json", "application/json; charset=utf-8", "application/yaml", "application/vnd.kubernetes.protobuf"} {
		if _, err := c.RequestSerializer(ct); err != nil {
			t.Errorf("%q: %v", ct, err)
		}
	}
	var um *UnsupportedMediaTypeError
	if _, err := c.RequestSerializer("text/plain"); !errors.As(err, &um) {
		t.Errorf("text/plain: want UnsupportedMediaTypeError, got %v", err)
	}
}
