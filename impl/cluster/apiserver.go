package cluster

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/kubeproof/kubeproof/impl/apiserver"
	"github.com/kubeproof/kubeproof/impl/apiserver/openapi"
	"github.com/kubeproof/kubeproof/impl/registry"
	"github.com/kubeproof/kubeproof/impl/storage/compact"
	"github.com/kubeproof/kubeproof/impl/storage/storagebackend"
)

// APIServerConfig is what an API server needs besides its flags' defaults.
type APIServerConfig struct {
	EtcdClient *clientv3.Client
	// EtcdPrefix is the key prefix of objects (default "/registry").
	EtcdPrefix string
	WatchCache bool
	// CompactionInterval: 0 means the default (5 minutes), negative never.
	CompactionInterval time.Duration
	ServingCert        *tls.Certificate
	ClientCA           *x509.CertPool
	// KubeletClientTLS: how pods/log, pods/exec and nodes/proxy reach kubelets.
	KubeletClientTLS *tls.Config
	// Listener, or BindAddress when nil.
	Listener    net.Listener
	BindAddress string
	Metrics     *prometheus.Registry
	Logger      *slog.Logger
}

// NewAPIServer assembles an API server serving every registered resource
// (registry.All) with OpenAPI documents, on etcd through the storage
// factory it returns. Close the factory after the server has stopped.
func NewAPIServer(cfg APIServerConfig) (*apiserver.Server, *storagebackend.Factory, error) {
	compaction := cfg.CompactionInterval
	switch {
	case compaction == 0:
		compaction = compact.DefaultInterval
	case compaction < 0:
		compaction = 0
	}
	factory := storagebackend.NewFactory(storagebackend.Config{
		Client: cfg.EtcdClient, Prefix: cfg.EtcdPrefix, WatchCache: cfg.WatchCache,
		CompactionInterval: compaction, Metrics: cfg.Metrics, Logger: cfg.Logger,
	})
	resources := registry.All()
	openAPI, err := openapi.NewHandler(resources)
	if err != nil {
		factory.Close()
		return nil, nil, fmt.Errorf("building OpenAPI documents: %w", err)
	}
	srv, err := apiserver.New(apiserver.Config{
		StorageFactory:   factory,
		Resources:        resources,
		ServingCert:      cfg.ServingCert,
		ClientCA:         cfg.ClientCA,
		KubeletClientTLS: cfg.KubeletClientTLS,
		OpenAPI:          openAPI,
		Metrics:          cfg.Metrics,
		Listener:         cfg.Listener,
		BindAddress:      cfg.BindAddress,
		Logger:           cfg.Logger,
	})
	if err != nil {
		factory.Close()
		return nil, nil, err
	}
	return srv, factory, nil
}

// EtcdClientLogger is the logger of kubeproof's etcd clients: errors only,
// so that etcd's client warnings (retries, balancer changes) stay out of a
// quiet log.
func EtcdClientLogger() *zap.Logger {
	cfg := zap.NewProductionConfig()
	cfg.Level = zap.NewAtomicLevelAt(zap.ErrorLevel)
	lg, err := cfg.Build()
	if err != nil {
		return zap.NewNop()
	}
	return lg
}
