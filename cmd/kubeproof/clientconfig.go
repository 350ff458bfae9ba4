package main

import (
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// loadClientConfig is the client configuration of our own client
// commands (check linearizability, bench --kubeconfig), found as kubectl
// finds it: the kubeconfig file path when given, else $KUBECONFIG's files
// merged, else ~/.kube/config (else in-cluster); then kubeContext, when
// given, instead of the file's current-context.
func loadClientConfig(path, kubeContext string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	overrides := &clientcmd.ConfigOverrides{CurrentContext: kubeContext}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
	switch {
	case clientcmd.IsEmptyConfig(err):
		return nil, fmt.Errorf("loading the client configuration: no kubeconfig found (give --kubeconfig, or set $KUBECONFIG): %w", err)
	case err != nil && path != "":
		return nil, fmt.Errorf("loading %s: %w", path, err)
	case err != nil:
		return nil, fmt.Errorf("loading the client configuration: %w", err)
	}
	return cfg, nil
}
