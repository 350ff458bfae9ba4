package main

import (
	"strings"
	"testing"
)

// TestKubeletAllowedUnsafeSysctlsFlag: `kubeproof kubelet
// --allowed-unsafe-sysctls` reaches the kubelet's config, which refuses a
// pattern that is no sysctl, or of no namespace the kernel keeps per pod,
// at start with upstream's messages, before contacting the API server.
func TestKubeletAllowedUnsafeSysctlsFlag(t *testing.T) {
	kubeconfig := unreachableKubeconfig(t)
	for _, tc := range []struct {
		arg, want string
	}{
		{"net.core.somaxconn,Kernel.msgmax", `failed to create kubelet: sysctl "Kernel.msgmax" must have at most 253 characters and match regex ([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*([a-z0-9][-_a-z0-9]*)?[a-z0-9*]`},
		{"net.*,vm.*", `failed to create kubelet: the sysctls "vm." are not known to be namespaced`},
	} {
		err := runKubelet(kubeconfig, "--allowed-unsafe-sysctls", tc.arg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--allowed-unsafe-sysctls %q: %v; want %q", tc.arg, err, tc.want)
		}
	}
}
