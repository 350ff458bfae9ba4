package cacher

import (
	"slices"

	"k8s.io/apimachinery/pkg/fields"
)

// fieldList is a cached object's selectable fields, keys and values
// alternating in key order: one slice instead of the map the kind's
// AttrFunc returns (a pod's ~12 fields are a map of three heap objects or
// more, kept for every cached version and marked in every GC cycle). The
// keys are the registry's constants and most values the object's own
// strings, so the slice is the only object of its own.
type fieldList []string

// A *fieldList is what a selector is given (&co.fields): a pointer goes
// into the fields.Fields interface without the copy a slice value would
// be boxed in.
var _ fields.Fields = (*fieldList)(nil)

func newFieldList(set fields.Set) fieldList {
	if len(set) == 0 {
		return nil
	}
	return appendFields(make(fieldList, 0, 2*len(set)), set)
}

// appendFields appends set to f, keys and values alternating in key order.
func appendFields(f fieldList, set fields.Set) fieldList {
	var kb [16]string // a pod's fields fit: no allocation for the keys
	keys := kb[:0]
	for k := range set {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		f = append(f, k, set[k])
	}
	return f
}

// Field lists that fit are allocated with their cachedObject, as one heap
// object (newCachedObject): metadata.name and metadata.namespace are most
// kinds' fields, a pod has ten.
const (
	smallFields = 2 * 2
	podFields   = 2 * 10
)

// newCachedObject returns an empty cachedObject whose fields have room for
// n strings, in the same allocation as the wrapper when n is at most
// podFields.
func newCachedObject(n int) *cachedObject {
	switch {
	case n == 0:
		return new(cachedObject)
	case n <= smallFields:
		b := new(struct {
			co  cachedObject
			buf [smallFields]string
		})
		b.co.fields = b.buf[:0:n]
		return &b.co
	case n <= podFields:
		b := new(struct {
			co  cachedObject
			buf [podFields]string
		})
		b.co.fields = b.buf[:0:n]
		return &b.co
	}
	return &cachedObject{fields: make(fieldList, 0, n)}
}

// Has reports whether the object has the field.
func (f fieldList) Has(field string) bool {
	_, ok := f.lookup(field)
	return ok
}

// Get returns the field's value ("" if the object has none).
func (f fieldList) Get(field string) string {
	v, _ := f.lookup(field)
	return v
}

func (f fieldList) lookup(field string) (string, bool) {
	for i := 0; i+1 < len(f); i += 2 {
		if f[i] == field {
			return f[i+1], true
		}
	}
	return "", false
}
