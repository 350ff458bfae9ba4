package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"k8s.io/client-go/rest"

	"github.com/kubeproof/kubeproof/impl/kubelet"
)

// clientCertExitPeriods are how long `kubeproof kubelet
// --rotate-certificates` goes on without a valid client certificate while
// the API server is responsive before it exits, and how often it looks.
type clientCertExitPeriods struct{ exitAfter, period time.Duration }

// clientCertExitPeriodsKey is the context key of clientCertExitPeriods.
type clientCertExitPeriodsKey struct{}

// withClientCertExitPeriods is ctx shortening, for the kubelet command
// executed with it (cobra's ExecuteContext), the exit periods: tests see
// the kubelet exit without waiting upstream's five minutes. A context
// value, not a package variable, so that a test changing them cannot race
// with another command of the test binary (a parallel test's, or one a
// failed test left running).
func withClientCertExitPeriods(ctx context.Context, exitAfter, period time.Duration) context.Context {
	return context.WithValue(ctx, clientCertExitPeriodsKey{}, clientCertExitPeriods{exitAfter, period})
}

// clientCertExitPeriodsOf are ctx's exit periods: upstream's 5m and 10s
// unless withClientCertExitPeriods set others.
func clientCertExitPeriodsOf(ctx context.Context) (exitAfter, period time.Duration) {
	if p, ok := ctx.Value(clientCertExitPeriodsKey{}).(clientCertExitPeriods); ok {
		return p.exitAfter, p.period
	}
	return kubelet.ClientCertificateExitAfter, kubelet.ClientCertificateCheckPeriod
}

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
