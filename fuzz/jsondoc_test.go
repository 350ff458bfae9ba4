package fuzz

import (
	"encoding/json"
	"strconv"
	"strings"
)

// jsonPath is a path into a decoded JSON document: object keys (string)
// and array indexes (int).
type jsonPath []any

// pointer renders p as a JSON pointer (RFC 6901).
func (p jsonPath) pointer() string {
	var b strings.Builder
	for _, e := range p {
		b.WriteByte('/')
		switch e := e.(type) {
		case string:
			b.WriteString(strings.ReplaceAll(strings.ReplaceAll(e, "~", "~0"), "/", "~1"))
		case int:
			b.WriteString(strconv.Itoa(e))
		}
	}
	return b.String()
}

// paths lists every path of doc, the root included, in a stable order.
func paths(doc any) []jsonPath {
	out := []jsonPath{{}}
	var walk func(prefix jsonPath, v any)
	walk = func(prefix jsonPath, v any) {
		switch v := v.(type) {
		case map[string]any:
			for _, k := range sortedKeys(v) {
				p := append(append(jsonPath{}, prefix...), k)
				out = append(out, p)
				walk(p, v[k])
			}
		case []any:
			for i, e := range v {
				p := append(append(jsonPath{}, prefix...), i)
				out = append(out, p)
				walk(p, e)
			}
		}
	}
	walk(nil, doc)
	return out
}

// fuzzValue returns a JSON value chosen by in: scalars of every type,
// quantities, and small containers.
func fuzzValue(in *input) any {
	switch in.intn(12) {
	case 0:
		return nil
	case 1:
		return in.bool()
	case 2:
		return json.Number(in.number())
	case 3:
		return map[string]any{}
	case 4:
		return []any{}
	case 5:
		return pick(in, []string{"100m", "1Gi", "1e3", "0.5", "-1", "1E", "9999999999999999999999Ei"})
	case 6:
		return map[string]any{in.string(8): fuzzValue(in)}
	case 7:
		return []any{fuzzValue(in)}
	case 8:
		return pick(in, []string{"", "a", "A_b", "kube-system", "default", "2026-01-01T00:00:00Z", "nginx", "Always", "TCP"})
	case 9:
		return json.Number("1.5")
	default:
		return in.string(24)
	}
}

// mutateJSON replaces, removes or adds one value in the JSON document doc;
// doc is returned unchanged when it is not JSON.
func mutateJSON(in *input, doc []byte) []byte {
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		return doc
	}
	for range 1 + in.intn(3) {
		ps := paths(v)
		p := ps[in.intn(len(ps))]
		switch in.intn(3) {
		case 0:
			v = setPath(v, p, fuzzValue(in))
		case 1:
			v = removePath(v, p)
		default:
			v = setPath(v, append(append(jsonPath{}, p...), in.string(10)), fuzzValue(in))
		}
	}
	out, err := json.Marshal(v)
	if err != nil {
		return doc
	}
	return out
}

// setPath sets p in v to value, creating objects on the way; a path
// through a scalar replaces it.
func setPath(v any, p jsonPath, value any) any {
	if len(p) == 0 {
		return value
	}
	switch e := p[0].(type) {
	case string:
		m, ok := v.(map[string]any)
		if !ok {
			m = map[string]any{}
		}
		m[e] = setPath(m[e], p[1:], value)
		return m
	case int:
		a, ok := v.([]any)
		if !ok || e >= len(a) {
			return v
		}
		a[e] = setPath(a[e], p[1:], value)
		return a
	}
	return v
}

// removePath deletes p from v.
func removePath(v any, p jsonPath) any {
	if len(p) == 0 {
		return nil
	}
	switch e := p[0].(type) {
	case string:
		if m, ok := v.(map[string]any); ok {
			if len(p) == 1 {
				delete(m, e)
			} else {
				m[e] = removePath(m[e], p[1:])
			}
		}
	case int:
		if a, ok := v.([]any); ok && e < len(a) {
			if len(p) == 1 {
				return append(a[:e:e], a[e+1:]...)
			}
			a[e] = removePath(a[e], p[1:])
		}
	}
	return v
}

// patchBody builds a patch of doc in the patch type contentType names:
// JSON patch operations on doc's paths, or a merge / strategic merge
// document setting one path (with strategic merge directives sometimes).
func patchBody(in *input, contentType string, doc []byte) []byte {
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		return doc
	}
	ps := paths(v)
	var patch any
	switch {
	case strings.HasPrefix(contentType, "application/json-patch+json"):
		var ops []any
		for range 1 + in.intn(3) {
			p := ps[in.intn(len(ps))].pointer()
			if in.intn(8) == 0 {
				p = in.string(12)
			}
			op := map[string]any{"op": pick(in, []string{"add", "remove", "replace", "move", "copy", "test", "bogus"}), "path": p}
			switch op["op"] {
			case "move", "copy":
				op["from"] = ps[in.intn(len(ps))].pointer()
			case "remove":
			default:
				op["value"] = fuzzValue(in)
			}
			ops = append(ops, op)
		}
		patch = ops
	default:
		p := ps[in.intn(len(ps))]
		value := fuzzValue(in)
		if strings.HasPrefix(contentType, "application/strategic-merge-patch+json") && in.intn(3) == 0 {
			value = map[string]any{pick(in, []string{"$patch", "$retainKeys", "$setElementOrder/containers", "$deleteFromPrimitiveList/finalizers"}): fuzzValue(in)}
		}
		patch = setPath(map[string]any{}, p, value)
	}
	out, err := json.Marshal(patch)
	if err != nil {
		return doc
	}
	return out
}
