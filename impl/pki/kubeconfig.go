package pki

import (
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Kubeconfig builds a kubeconfig with one cluster, one user authenticating
// with a client certificate, and one current context.
func Kubeconfig(server string, caPEM []byte, user string, client KeyPair) *clientcmdapi.Config {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["kubeproof"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: client.CertPEM, ClientKeyData: client.KeyPEM}
	cfg.Contexts["kubeproof"] = &clientcmdapi.Context{Cluster: "kubeproof", AuthInfo: user, Namespace: "default"}
	cfg.CurrentContext = "kubeproof"
	return cfg
}

// WriteKubeconfig writes cfg to path (mode 0600).
func WriteKubeconfig(path string, cfg *clientcmdapi.Config) error {
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("writing kubeconfig %s: %w", path, err)
	}
	return nil
}

// RESTConfig is the client-go configuration of the same identity.
func RESTConfig(server string, caPEM []byte, client KeyPair) *rest.Config {
	return &rest.Config{
		Host: server,
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   caPEM,
			CertData: client.CertPEM,
			KeyData:  client.KeyPEM,
		},
	}
}
