// Package deps keeps in go.mod the dependencies the design chose whose
// users are not written yet: the CNI library and plugins for the end-to-end
// suite on real containers (issue 9), and gofuzz, the name the design gives
// for structure-aware fuzzing (the fuzz targets use its maintained successor,
// sigs.k8s.io/randfill). Remove each import when real code imports it.
package deps

import (
	_ "github.com/containernetworking/cni/libcni"
	_ "github.com/containernetworking/plugins/pkg/ns"
	_ "github.com/google/gofuzz"
)
