package endpoints

import "slices"

// retainKeysDirective is a strategic merge patch's list of the fields a
// map keeps.
const retainKeysDirective = "$retainKeys"

// dropUnhashableRetainKeys removes the lists and objects from every
// $retainKeys list of a strategic merge patch (v, as decoded from JSON),
// in place. apimachinery's strategicpatch puts a directive's elements in
// a Go map to look field names up, which panics ("hash of unhashable
// type") on such an element; kube-apiserver, merging with the same code,
// answers 500. A list or an object never equals a field name, so the merge
// without them is the one the directive defines: the fields it names are
// kept, and a patch field it does not name is still a 400.
func dropUnhashableRetainKeys(v any) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if k != retainKeysDirective {
				dropUnhashableRetainKeys(e)
				continue
			}
			if l, ok := e.([]any); ok {
				v[k] = slices.DeleteFunc(l, func(x any) bool {
					switch x.(type) {
					case []any, map[string]any:
						return true
					}
					return false
				})
			}
		}
	case []any:
		for _, e := range v {
			dropUnhashableRetainKeys(e)
		}
	}
}
