// Package embedded runs a single-member etcd server inside the process, for
// the all-in-one binary (`kubeproof up`) and for tests. Clients talk to it
// over gRPC on loopback TCP, exactly as they would to an external etcd
// (Client), or in-process (InProcessClient): etcd's own v3client, whose
// calls go straight to the server's KV, watch and lease services without
// gRPC encoding, HTTP/2 or a socket in between.
package embedded

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3client"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3rpc"
	"go.etcd.io/etcd/server/v3/proxy/grpcproxy/adapter"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Config configures an embedded etcd.
type Config struct {
	// DataDir holds etcd's WAL and database. Starting again on the same
	// DataDir keeps every key.
	DataDir string
	// ClientPort is the loopback port clients connect to; 0 picks a free one.
	ClientPort int
	// PeerPort is the loopback peer port; 0 picks a free one.
	PeerPort int
	// UnsafeNoFsync disables fsync (tests and benchmarks only: a crash may
	// lose acknowledged writes).
	UnsafeNoFsync bool
	// WatchProgressNotifyInterval is how often etcd sends progress
	// notifications to watches that ask for them; 0 keeps etcd's default.
	WatchProgressNotifyInterval time.Duration
	// QuotaBackendBytes caps the database size; 0 keeps etcd's default (2 GiB).
	QuotaBackendBytes int64
	// StartTimeout bounds how long Start waits for the server to be ready;
	// 0 means one minute.
	StartTimeout time.Duration
	// LogLevel is etcd's zap log level; "" means "error".
	LogLevel string
}

// Etcd is a running embedded etcd server with a client connected to it.
type Etcd struct {
	server    *embed.Etcd
	client    *clientv3.Client
	inProcess *clientv3.Client
	endpoints []string
}

// Start starts etcd in cfg.DataDir and waits until it serves requests.
func Start(ctx context.Context, cfg Config) (*Etcd, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("embedded etcd: DataDir is required")
	}
	// A free port is chosen before etcd listens on it, so another process
	// may take it in between; when that happens to a port we chose, choose
	// again.
	var (
		srv       *embed.Etcd
		clientURL *url.URL
		lg        *zap.Logger
	)
	for attempt := 1; ; attempt++ {
		var err error
		srv, clientURL, lg, err = startOnce(cfg)
		if err == nil {
			break
		}
		portsChosen := cfg.ClientPort == 0 || cfg.PeerPort == 0
		if !portsChosen || !errors.Is(err, syscall.EADDRINUSE) || attempt == maxPortAttempts {
			return nil, err
		}
	}
	timeout := cfg.StartTimeout
	if timeout == 0 {
		timeout = time.Minute
	}
	select {
	case <-srv.Server.ReadyNotify():
	case err := <-srv.Err():
		srv.Close()
		return nil, fmt.Errorf("embedded etcd failed while starting: %w", err)
	case <-time.After(timeout):
		srv.Close()
		return nil, fmt.Errorf("embedded etcd not ready after %s", timeout)
	case <-ctx.Done():
		srv.Close()
		return nil, fmt.Errorf("starting embedded etcd: %w", ctx.Err())
	}

	endpoints := []string{clientURL.Host}
	client, err := clientv3.New(clientv3.Config{
		Endpoints:          endpoints,
		DialTimeout:        10 * time.Second,
		Logger:             lg,
		MaxCallSendMsgSize: 4 * 1024 * 1024,
		MaxCallRecvMsgSize: 0, // unlimited, lists can be large
	})
	if err != nil {
		srv.Close()
		return nil, fmt.Errorf("connecting to embedded etcd at %s: %w", clientURL.Host, err)
	}
	inProcess := v3client.New(srv.Server)
	inProcess.KV = requestKV{KV: inProcess.KV, remote: adapter.KvServerToKvClient(v3rpc.NewQuotaKVServer(srv.Server))}
	return &Etcd{server: srv, client: client, inProcess: inProcess, endpoints: []string{clientURL.String()}}, nil
}

// Client returns a gRPC client connected to the server over loopback TCP.
// It is closed by Close.
func (e *Etcd) Client() *clientv3.Client { return e.client }

// InProcessClient returns etcd's in-process client of the server
// (go.etcd.io/etcd/server/v3/etcdserver/api/v3client): the same KV, watch
// and lease services a gRPC client reaches, called directly. Requests go
// through the same quota, size and raft checks; what it skips is the gRPC
// layer (marshalling, HTTP/2 framing, loopback TCP and the server's gRPC
// interceptors: request logging, gRPC metrics and the require-leader check,
// which a single member that is ready always passes). It has no endpoints
// and no connection, so clientv3.NewWatcher cannot be used on it: take
// watchers of its own from NewWatcher. Its KV also takes transactions as
// etcd's API has them (TxnRequest), for callers that build the request
// themselves. It is closed by Close.
func (e *Etcd) InProcessClient() *clientv3.Client { return e.inProcess }

// NewWatcher returns a Watcher of its own on the in-process client: its
// watch streams are not shared with any other Watcher's, as with
// clientv3.NewWatcher on a gRPC client. Close it when done.
func (e *Etcd) NewWatcher() clientv3.Watcher {
	wc := adapter.WatchServerToWatchClient(v3rpc.NewWatchServer(e.server.Server))
	return plainContextWatcher{clientv3.NewWatchFromWatchClient(wc, e.inProcess)}
}

// plainContextWatcher hides the watch context's String method from the
// in-process watch server, which formats it: a context carrying trace data
// would be read while another goroutine writes it (v3client's own watcher
// does the same).
type plainContextWatcher struct{ clientv3.Watcher }

func (w plainContextWatcher) Watch(ctx context.Context, key string, opts ...clientv3.OpOption) clientv3.WatchChan {
	return w.Watcher.Watch(plainContext{ctx}, key, opts...)
}

type plainContext struct{ context.Context }

func (plainContext) String() string { return "(watch context)" }

// Endpoints returns the client URLs (http://127.0.0.1:<port>).
func (e *Etcd) Endpoints() []string { return append([]string(nil), e.endpoints...) }

// Close closes the client and stops the server, waiting until it has
// released its ports and files.
func (e *Etcd) Close() error {
	_ = e.inProcess.Close() // only cancels its context
	cerr := e.client.Close()
	e.server.Close()
	<-e.server.Server.StopNotify()
	if cerr != nil && !errors.Is(cerr, context.Canceled) {
		return fmt.Errorf("closing embedded etcd client: %w", cerr)
	}
	return nil
}

// CatchUpEntries is how many applied raft entries the embedded member
// keeps in memory after each raft log compaction (etcd's
// --snapshot-catchup-entries; its default is 5,000). They are there for a
// slow follower to catch up from; this member has none. etcd 3.6
// compacts the in-memory log every 100 applied entries, copying what it
// keeps each time: at 5,000 that copy and the log's regrowth after it
// were 41 KB of every pod's ~850 KB of allocations in startup-1000x30000
// (5% of what the garbage collector has to keep up with), and the kept
// entries held ~6 MB of requests.
const CatchUpEntries = 100

// maxPortAttempts bounds how often Start chooses new free ports after
// losing one to another process.
const maxPortAttempts = 5

// startOnce chooses the ports and starts etcd once; it returns the client
// URL and the logger the client should share.
func startOnce(cfg Config) (*embed.Etcd, *url.URL, *zap.Logger, error) {
	clientURL, err := loopbackURL(cfg.ClientPort)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("choosing etcd client port: %w", err)
	}
	peerURL, err := loopbackURL(cfg.PeerPort)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("choosing etcd peer port: %w", err)
	}

	ec := embed.NewConfig()
	ec.Name = "kubeproof"
	ec.Dir = cfg.DataDir
	ec.ListenClientUrls = []url.URL{*clientURL}
	ec.AdvertiseClientUrls = []url.URL{*clientURL}
	ec.ListenPeerUrls = []url.URL{*peerURL}
	ec.AdvertisePeerUrls = []url.URL{*peerURL}
	ec.InitialCluster = ec.Name + "=" + peerURL.String()
	ec.UnsafeNoFsync = cfg.UnsafeNoFsync
	// kube-apiserver compacts on its own schedule (package compact); etcd's
	// own periodic compactor stays off.
	ec.AutoCompactionRetention = "0"
	if cfg.WatchProgressNotifyInterval > 0 {
		ec.WatchProgressNotifyInterval = cfg.WatchProgressNotifyInterval
	}
	if cfg.QuotaBackendBytes > 0 {
		ec.QuotaBackendBytes = cfg.QuotaBackendBytes
	}
	// API objects may be up to 3 MiB plus envelope.
	ec.MaxRequestBytes = 4 * 1024 * 1024
	ec.SnapshotCatchUpEntries = CatchUpEntries
	level := cfg.LogLevel
	if level == "" {
		level = "error"
	}
	ec.LogLevel = level
	lg, err := newLogger(level)
	if err != nil {
		return nil, nil, nil, err
	}
	ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(lg)

	srv, err := embed.StartEtcd(ec)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("starting embedded etcd in %s: %w", cfg.DataDir, err)
	}
	return srv, clientURL, lg, nil
}

// loopbackURL returns http://127.0.0.1:port, picking a free port when port
// is 0. (etcd must know its port before it listens because the port is part
// of the member's advertised URLs.)
func loopbackURL(port int) (*url.URL, error) {
	if port == 0 {
		var err error
		if port, err = freeLoopbackPort(); err != nil {
			return nil, err
		}
	}
	return &url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}, nil
}

// freeLoopbackPort returns a loopback port that was free a moment ago. It is
// a variable so that a test can hand out a taken port.
var freeLoopbackPort = func() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	return port, l.Close()
}

func newLogger(level string) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("embedded etcd log level %q: %w", level, err)
	}
	zc := zap.NewProductionConfig()
	zc.Level = zap.NewAtomicLevelAt(lvl)
	zc.Sampling = nil
	lg, err := zc.Build(zap.WrapCore(func(c zapcore.Core) zapcore.Core { return shutdownNoiseFilter{c} }))
	if err != nil {
		return nil, fmt.Errorf("building etcd logger: %w", err)
	}
	return lg, nil
}

// shutdownNoiseFilter drops the errors etcd logs on every normal Close
// ("setting up serving from embedded etcd failed" with "server closed" or
// "use of closed network connection").
type shutdownNoiseFilter struct{ zapcore.Core }

func (f shutdownNoiseFilter) With(fields []zapcore.Field) zapcore.Core {
	return shutdownNoiseFilter{f.Core.With(fields)}
}

func (f shutdownNoiseFilter) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if !f.Enabled(e.Level) {
		return ce
	}
	return ce.AddCore(e, f)
}

func (f shutdownNoiseFilter) Write(e zapcore.Entry, fields []zapcore.Field) error {
	if e.Message == "setting up serving from embedded etcd failed." {
		for _, fl := range fields {
			if fl.Key != "error" {
				continue
			}
			if err, ok := fl.Interface.(error); ok {
				msg := err.Error()
				if strings.Contains(msg, "server closed") || strings.Contains(msg, "Server closed") ||
					strings.Contains(msg, "use of closed network connection") {
					return nil
				}
			}
		}
	}
	return f.Core.Write(e, fields)
}
