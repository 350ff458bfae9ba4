package main

import (
	"fmt"
	"os"

	"k8s.io/client-go/rest"

	"github.com/kubeproof/kubeproof/impl/kubelet"
)

// clientCertExitAfter is how long `kubeproof kubelet --rotate-certificates`
// goes on without a valid client certificate while the API server is
// responsive before it exits, and clientCertCheckPeriod how often it
// looks: upstream's 5m and 10s. Tests shorten them to see it exit.
var clientCertExitAfter, clientCertCheckPeriod = kubelet.ClientCertificateExitAfter, kubelet.ClientCertificateCheckPeriod

// kubeconfigClientCert is the client certificate and key of a kubeconfig
// (embedded or in files; none is nil): --rotate-certificates starts from
// it when --cert-dir holds none, as upstream's kubelet does.
func kubeconfigClientCert(cfg *rest.Config) (certPEM, keyPEM []byte, err error) {
	certPEM, keyPEM = cfg.CertData, cfg.KeyData
	if len(certPEM) == 0 && cfg.CertFile != "" {
		if certPEM, err = os.ReadFile(cfg.CertFile); err != nil {
			return nil, nil, fmt.Errorf("reading the kubeconfig's client certificate: %w", err)
		}
	}
	if len(keyPEM) == 0 && cfg.KeyFile != "" {
		if keyPEM, err = os.ReadFile(cfg.KeyFile); err != nil {
			return nil, nil, fmt.Errorf("reading the kubeconfig's client key: %w", err)
		}
	}
	if len(certPEM) == 0 || len(keyPEM) == 0 {
		return nil, nil, nil
	}
	return certPEM, keyPEM, nil
}
