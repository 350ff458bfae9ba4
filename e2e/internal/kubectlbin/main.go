// Command kubectlbin is kubectl built from the k8s.io/kubectl module. The
// kubectl tests build and use it when no kubectl binary is on the PATH, so
// they never skip for want of one.
package main

import (
	"os"

	"k8s.io/kubectl/pkg/cmd"
)

func main() {
	if err := cmd.NewDefaultKubectlCommand().Execute(); err != nil {
		os.Exit(1)
	}
}
