package codec

import (
	"strconv"
	"strings"
)

// Media types the server reads and writes.
const (
	JSON     = "application/json"
	YAML     = "application/yaml"
	Protobuf = "application/vnd.kubernetes.protobuf"
)

// MediaType is one entry of an Accept or Content-Type header.
type MediaType struct {
	Type    string // e.g. "application"
	SubType string // e.g. "json"
	Params  map[string]string
	Q       float64
}

// Full is "type/subtype".
func (m MediaType) Full() string { return m.Type + "/" + m.SubType }

// ParseAccept parses an Accept header into media types in the order given,
// stably sorted by descending q. An empty header is "*/*".
func ParseAccept(header string) []MediaType {
	if strings.TrimSpace(header) == "" {
		return []MediaType{{Type: "*", SubType: "*", Q: 1}}
	}
	var out []MediaType
	for part := range strings.SplitSeq(header, ",") {
		mt, ok := ParseMediaType(part)
		if !ok || mt.Q <= 0 {
			continue
		}
		out = append(out, mt)
	}
	// insertion sort: stable and the lists are tiny.
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].Q > out[j-1].Q; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// ParseMediaType parses one "type/subtype;k=v;q=0.5" entry.
func ParseMediaType(s string) (MediaType, bool) {
	first, params, _ := strings.Cut(s, ";")
	full := strings.ToLower(strings.TrimSpace(first))
	typ, sub, ok := strings.Cut(full, "/")
	if !ok || typ == "" || sub == "" {
		return MediaType{}, false
	}
	mt := MediaType{Type: typ, SubType: sub, Q: 1}
	for params != "" {
		var p string
		p, params, _ = strings.Cut(params, ";")
		k, v, ok := strings.Cut(p, "=")
		if !ok {
			continue
		}
		k = strings.ToLower(strings.TrimSpace(k))
		v = strings.Trim(strings.TrimSpace(v), `"`)
		if k == "q" {
			if q, err := strconv.ParseFloat(v, 64); err == nil {
				mt.Q = q
			}
			continue
		}
		if k == "charset" {
			continue
		}
		if mt.Params == nil {
			mt.Params = map[string]string{}
		}
		mt.Params[k] = v
	}
	return mt, true
}

// matches reports whether accept range a admits concrete type full.
func (m MediaType) matches(full string) bool {
	if m.Type == "*" {
		return true
	}
	typ, sub, _ := strings.Cut(full, "/")
	return m.Type == typ && (m.SubType == "*" || m.SubType == sub)
}
