package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"

	"github.com/kubeproof/kubeproof/impl/kubelet"
	"github.com/kubeproof/kubeproof/impl/kubelet/server"
)

// kubeletAPIOptions configure a standalone kubelet's HTTPS API.
type kubeletAPIOptions struct {
	address          string
	port             int32
	nodeIP, nodeName string
	tls              server.TLSOptions
	// auth: webhook authentication and authorization; nil: none beyond TLS.
	auth *server.Auth
}

// runKubeletWithAPI runs k and, unless the port is 0, its kubelet API
// (serving just k) until ctx ends or either fails.
func runKubeletWithAPI(ctx context.Context, k *kubelet.Kubelet, o kubeletAPIOptions, logger *slog.Logger) error {
	if o.port == 0 {
		return k.Run(ctx)
	}
	o.tls.Hosts = []string{o.nodeName, "localhost", "127.0.0.1"}
	if o.nodeIP != "" {
		o.tls.Hosts = append(o.tls.Hosts, o.nodeIP)
	}
	tlsConfig, err := server.TLSConfig(o.tls)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(o.address, strconv.Itoa(int(o.port))))
	if err != nil {
		return fmt.Errorf("kubelet API: %w", err)
	}
	mux := server.NewMux(server.Options{Logger: logger, Auth: o.auth})
	mux.Add(k)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	apiErr := make(chan error, 1)
	go func() { apiErr <- server.Serve(ctx, ln, mux, tlsConfig) }()
	runErr := k.Run(ctx)
	cancel()
	return errors.Join(runErr, <-apiErr)
}
