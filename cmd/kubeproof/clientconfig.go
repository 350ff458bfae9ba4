package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/homedir"
)

// loadClientConfig is the client configuration of our own client
// commands (check linearizability, bench --kubeconfig), found as kubectl
// finds it: the kubeconfig file path when given, else $KUBECONFIG's files
// merged, else ~/.kube/config (else in-cluster); then kubeContext, when
// given, instead of the file's current-context.
func loadClientConfig(path, kubeContext string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if os.Getenv(clientcmd.RecommendedConfigPathEnvVar) == "" {
		// client-go fixes ~/.kube/config (and its migration from
		// ~/.kube/.kubeconfig) when its package is initialised; take the
		// home directory of now, so a caller (a test) that changed $HOME
		// does not reach the kubeconfig of the home it started with.
		rules.Precedence = []string{filepath.Join(homedir.HomeDir(), clientcmd.RecommendedHomeDir, clientcmd.RecommendedFileName)}
		rules.MigrationRules = nil
	}
	rules.ExplicitPath = path
	overrides := &clientcmd.ConfigOverrides{CurrentContext: kubeContext}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
	switch {
	case clientcmd.IsEmptyConfig(err):
		// client-go's text suggests KUBERNETES_MASTER, which these rules
		// do not read: say where we looked.
		return nil, fmt.Errorf("loading the client configuration: no kubeconfig found (no --kubeconfig, nothing in %s, and no in-cluster configuration: KUBERNETES_SERVICE_HOST unset or no service account token): %w",
			strings.Join(rules.Precedence, string(filepath.ListSeparator)), err)
	case err != nil && path != "":
		return nil, fmt.Errorf("loading %s: %w", path, err)
	case err != nil:
		return nil, fmt.Errorf("loading the client configuration: %w", err)
	}
	return cfg, nil
}
