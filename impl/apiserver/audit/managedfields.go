package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// omitManagedFields returns js, a response object as JSON, without the
// managedFields a policy's omitManagedFields drops, as kube-apiserver's
// copyWithoutManagedFields (k8s.io/apiserver pkg/audit/request.go) drops
// them from a copy of the object it records:
//
//   - the object's own metadata.managedFields (an object with metadata;
//     a list's metadata has none);
//   - of a list (an "items" array), each item's: an item that is not an
//     object is an error, as for kube-apiserver's unstructured lists;
//   - of a meta.k8s.io Table (v1 or v1beta1), each row object's
//     (PartialObjectMetadata or the whole object; a row without one, as
//     under includeObject=None, has nothing to drop).
//
// Everything else is kept as written: members in their order, numbers
// with their digits. js is not changed. When a removal fails, js is
// returned whole with the error: kube-apiserver then records the object
// as it is, managedFields and all. JSON that is not an object (no
// accessor, list or Table) is returned as it is.
func omitManagedFields(js []byte) ([]byte, error) {
	members, ok := jsonObject(js)
	if !ok {
		return js, nil
	}
	table := isMetaTable(members)
	changed := false
	for i, m := range members {
		var (
			value json.RawMessage
			did   bool
			err   error
		)
		switch {
		case m.key == "metadata":
			value, did = metadataWithoutManagedFields(m.value)
		case m.key == "items":
			value, did, err = eachWithoutManagedFields(m.value, func(item json.RawMessage) (json.RawMessage, bool, error) {
				if _, ok := jsonObject(item); !ok {
					return nil, false, fmt.Errorf("list item %s is not an object", truncated(item))
				}
				v, did := objectWithoutManagedFields(item)
				return v, did, nil
			})
		case m.key == "rows" && table:
			value, did, err = eachWithoutManagedFields(m.value, rowWithoutManagedFields)
		}
		if err != nil {
			return js, err
		}
		if did {
			members[i].value, changed = value, true
		}
	}
	if !changed {
		return js, nil
	}
	return encodeJSONObject(members), nil
}

// isMetaTable says whether members are those of a meta.k8s.io Table
// (kube-apiserver's *metav1.Table, which v1beta1's Table is an alias of).
func isMetaTable(members []jsonMember) bool {
	var kind, apiVersion string
	for _, m := range members {
		switch m.key {
		case "kind":
			_ = json.Unmarshal(m.value, &kind)
		case "apiVersion":
			_ = json.Unmarshal(m.value, &apiVersion)
		}
	}
	return kind == "Table" && (apiVersion == "meta.k8s.io/v1" || apiVersion == "meta.k8s.io/v1beta1")
}

// rowWithoutManagedFields drops the managedFields of a Table row's
// object; a row without one (null or absent) has none.
func rowWithoutManagedFields(row json.RawMessage) (json.RawMessage, bool, error) {
	members, ok := jsonObject(row)
	if !ok {
		return nil, false, fmt.Errorf("table row %s is not an object", truncated(row))
	}
	changed := false
	for i, m := range members {
		if m.key != "object" || bytes.Equal(m.value, []byte("null")) {
			continue
		}
		if _, ok := jsonObject(m.value); !ok {
			return nil, false, fmt.Errorf("table row object %s is not an object", truncated(m.value))
		}
		if v, did := objectWithoutManagedFields(m.value); did {
			members[i].value, changed = v, true
		}
	}
	if !changed {
		return row, false, nil
	}
	return encodeJSONObject(members), true, nil
}

// eachWithoutManagedFields applies drop to each element of arr, a JSON
// array; anything else (null included) has no elements to change.
func eachWithoutManagedFields(arr json.RawMessage, drop func(json.RawMessage) (json.RawMessage, bool, error)) (json.RawMessage, bool, error) {
	var elems []json.RawMessage
	if json.Unmarshal(arr, &elems) != nil {
		return nil, false, nil
	}
	changed := false
	for i, e := range elems {
		v, did, err := drop(e)
		if err != nil {
			return nil, false, err
		}
		if did {
			elems[i], changed = v, true
		}
	}
	if !changed {
		return nil, false, nil
	}
	var b bytes.Buffer
	b.WriteByte('[')
	for i, e := range elems {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(e)
	}
	b.WriteByte(']')
	return b.Bytes(), true, nil
}

// objectWithoutManagedFields drops obj's metadata.managedFields, when it
// has them; an object whose metadata is no object has none to drop.
func objectWithoutManagedFields(obj json.RawMessage) (json.RawMessage, bool) {
	members, ok := jsonObject(obj)
	if !ok {
		return obj, false
	}
	changed := false
	for i, m := range members {
		if m.key != "metadata" {
			continue
		}
		if v, did := metadataWithoutManagedFields(m.value); did {
			members[i].value, changed = v, true
		}
	}
	if !changed {
		return obj, false
	}
	return encodeJSONObject(members), true
}

// metadataWithoutManagedFields drops the managedFields member of md, an
// object's metadata.
func metadataWithoutManagedFields(md json.RawMessage) (json.RawMessage, bool) {
	members, ok := jsonObject(md)
	if !ok {
		return md, false
	}
	kept := members[:0:0]
	for _, m := range members {
		if m.key != "managedFields" {
			kept = append(kept, m)
		}
	}
	if len(kept) == len(members) {
		return md, false
	}
	return encodeJSONObject(kept), true
}

// jsonMember is a member of a JSON object, its value as written.
type jsonMember struct {
	key   string
	value json.RawMessage
}

// jsonObject splits js into its members, in order; ok is false when js
// is not one JSON object.
func jsonObject(js []byte) ([]jsonMember, bool) {
	dec := json.NewDecoder(bytes.NewReader(js))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	var members []jsonMember
	for dec.More() {
		tok, err := dec.Token()
		key, isKey := tok.(string)
		if err != nil || !isKey {
			return nil, false
		}
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil, false
		}
		members = append(members, jsonMember{key: key, value: value})
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, false
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, false
	}
	return members, true
}

// encodeJSONObject writes members as a JSON object, in order.
func encodeJSONObject(members []jsonMember) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	b.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			b.WriteByte(',')
		}
		// A string always encodes.
		_ = enc.Encode(m.key)
		b.Truncate(b.Len() - 1) // the Encoder's newline
		b.WriteByte(':')
		b.Write(m.value)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// truncated is js for an error message: at most 64 bytes of it.
func truncated(js []byte) string {
	const limit = 64
	if len(js) > limit {
		return string(js[:limit]) + "..."
	}
	return string(js)
}
