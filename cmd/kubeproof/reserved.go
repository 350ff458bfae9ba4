package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet"
)

// reservedFlag is a --system-reserved or --kube-reserved value of
// `kubeproof kubelet` and `kubeproof up`, of upstream's kubelet's flag
// type (component-base's MapStringString, kubelet.SplitReserved): each
// use of the flag adds its resource=quantity pairs to those of the uses
// before it, and a malformed pair is pflag's error naming the flag
// (invalid argument "cpu" for "--kube-reserved" flag: malformed pair,
// expect string=string).
type reservedFlag map[string]string

func (f reservedFlag) Set(s string) error { return kubelet.SplitReserved(f, s) }

func (f reservedFlag) String() string {
	pairs := make([]string, 0, len(f))
	for _, k := range slices.Sorted(maps.Keys(f)) {
		pairs = append(pairs, k+"="+f[k])
	}
	return strings.Join(pairs, ",")
}

func (reservedFlag) Type() string { return "mapStringString" }

// list is the reservation f gives (kubelet.ReservedList), its error as
// upstream's kubelet reports it for flag ("--system-reserved value failed
// to parse: ...").
func (f reservedFlag) list(flag string) (v1.ResourceList, error) {
	rl, err := kubelet.ReservedList(f)
	if err != nil {
		return nil, fmt.Errorf("%s value failed to parse: %w", flag, err)
	}
	return rl, nil
}
