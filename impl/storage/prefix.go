package storage

import (
	"path"
	"strings"
)

// DefaultPrefix is where kube-apiserver keeps objects in etcd.
const DefaultPrefix = "/registry"

// NormalizePrefix returns the prefix a store puts before every key given the
// configured one (--etcd-prefix): DefaultPrefix when empty, otherwise rooted
// and cleaned as kube-apiserver's etcd3 storage does (path.Join("/", p)), so
// "foo", "foo/" and "//foo/" all keep objects under "/foo/". It has no
// trailing slash: "/" gives "", keys straight under the root.
func NormalizePrefix(p string) string {
	if p == "" {
		return DefaultPrefix
	}
	return strings.TrimSuffix(path.Join("/", p), "/")
}
