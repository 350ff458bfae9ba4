package apiserver

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"sync"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/kubeproof/kubeproof/impl/controller/workloop"
)

// Legacy token tracking, as kube-apiserver's legacy token tracking
// controller: the ConfigMap kube-system/kube-apiserver-legacy-service-account-token-tracking
// records in data.since the UTC date from which this server labels legacy
// token secrets with their last-used date, so that the controller
// manager's legacy-service-account-token-cleaner knows from when an absent
// label means "unused".
//
// Like upstream's, the controller watches that one ConfigMap (an informer
// listing kube-system with a metadata.name field selector, resynced every
// 12 hours) through the server's loopback client, so its writes are API
// requests of system:apiserver that pass admission. Every event puts the
// one key on a rate-limited work queue; a sync creates the ConfigMap when
// the cache has none and rewrites a since that is not a date at once. A
// creation is allowed once per legacyTrackingCreationInterval (burst one):
// a deletion soon after this server created it is answered when the
// interval has passed, which keeps API servers of mixed versions from
// fighting over it; a failed creation gives its allowance back. Updates
// are not limited. A failed sync is retried with the queue's back-off.
// kube-apiserver always runs it, whatever its authenticators, and so does
// this server whenever it serves configmaps.

const (
	legacyTrackingConfigMap = "kube-apiserver-legacy-service-account-token-tracking"
	legacyTrackingSinceKey  = "since"
	// legacyTrackingCreationInterval is how often the ConfigMap may be
	// created.
	legacyTrackingCreationInterval = 30 * time.Minute
	// legacyTrackingResync is the informer's resync period.
	legacyTrackingResync = 12 * time.Hour
)

// legacyTrackingKey is the queue's one key, the ConfigMap's cache key.
const legacyTrackingKey = metav1.NamespaceSystem + "/" + legacyTrackingConfigMap

var configMapsGVR = corev1.SchemeGroupVersion.WithResource("configmaps")

// legacyTrackingDecision is what to write given the cached ConfigMap: a
// ConfigMap to create (cur is nil: there is none), cur with data.since set
// to now's UTC date to update (its since is not a date), or nothing (nil).
func legacyTrackingDecision(cur *corev1.ConfigMap, now time.Time) *corev1.ConfigMap {
	today := now.UTC().Format(time.DateOnly)
	if cur == nil {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: legacyTrackingConfigMap},
			Data: map[string]string{legacyTrackingSinceKey: today}}
	}
	if _, err := time.Parse(time.DateOnly, cur.Data[legacyTrackingSinceKey]); err == nil {
		return nil
	}
	out := cur.DeepCopy()
	if out.Data == nil {
		out.Data = map[string]string{}
	}
	out.Data[legacyTrackingSinceKey] = today
	return out
}

// legacyTokenTracking is the controller: an informer on the ConfigMap, a
// work queue of its key and the creation limiter.
type legacyTokenTracking struct {
	client    kubernetes.Interface
	informer  cache.SharedIndexInformer
	queue     workqueue.TypedRateLimitingInterface[string]
	creations *rate.Limiter
	clock     clock.WithTicker
	log       *slog.Logger
}

// newLegacyTokenTracking wires the controller on client; clk is the
// queue's and the limiter's clock, creations the creation limiter
// (newLegacyTrackingLimiter for the real one).
func newLegacyTokenTracking(client kubernetes.Interface, clk clock.WithTicker, creations *rate.Limiter, log *slog.Logger) *legacyTokenTracking {
	informer := coreinformers.NewFilteredConfigMapInformer(client, metav1.NamespaceSystem, legacyTrackingResync,
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}, func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", legacyTrackingConfigMap).String()
		})
	t := &legacyTokenTracking{
		client:   client,
		informer: informer,
		// Unnamed, unlike upstream's legacy_token_tracking_controller:
		// this server serves no work queue metrics, and a named queue
		// would report to client-go's process-wide provider, which the
		// controller manager sets in a `kubeproof up` process.
		queue:     workloop.NewQueueWithClock("", clk),
		creations: creations,
		clock:     clk,
		log:       log,
	}
	enqueue := func() { t.queue.Add(legacyTrackingKey) }
	_, _ = informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { enqueue() },
		UpdateFunc: func(any, any) { enqueue() },
		DeleteFunc: func(any) { enqueue() },
	})
	return t
}

// newLegacyTrackingLimiter is the creation limiter: one creation, then
// one per legacyTrackingCreationInterval.
func newLegacyTrackingLimiter() *rate.Limiter {
	return rate.NewLimiter(rate.Every(legacyTrackingCreationInterval), 1)
}

// run runs the informer and, once it has synced, syncs the ConfigMap on
// every event and once at the start, until ctx ends.
//
// It returns once the informer and the worker have ended, so that its
// caller may then close the client's connections.
func (t *legacyTokenTracking) run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { t.informer.RunWithContext(ctx) })
	if err := workloop.WaitForSync(ctx, "legacy token tracking", t.queue, t.informer.HasSynced); err != nil {
		return
	}
	t.queue.Add(legacyTrackingKey)
	// One worker, retried with the queue's back-off for as long as it fails.
	workloop.RunWithMaxRetries(ctx, "legacy token tracking", t.queue, 1, math.MaxInt, func(ctx context.Context, _ string) error {
		err := t.sync(ctx)
		if err != nil && ctx.Err() == nil {
			t.log.Warn("keeping the legacy service account token tracking ConfigMap", "err", err)
		}
		return err
	})
}

// sync writes what legacyTrackingDecision says of the cached ConfigMap.
func (t *legacyTokenTracking) sync(ctx context.Context) error {
	obj, exists, err := t.informer.GetIndexer().GetByKey(legacyTrackingKey)
	if err != nil {
		return fmt.Errorf("reading the cached kube-system/%s: %w", legacyTrackingConfigMap, err)
	}
	var cur *corev1.ConfigMap
	if exists {
		var ok bool
		if cur, ok = obj.(*corev1.ConfigMap); !ok {
			return fmt.Errorf("cached kube-system/%s is a %T", legacyTrackingConfigMap, obj)
		}
	}
	now := t.clock.Now()
	want := legacyTrackingDecision(cur, now)
	if want == nil {
		return nil
	}
	configMaps := t.client.CoreV1().ConfigMaps(metav1.NamespaceSystem)
	if cur == nil {
		r := t.creations.ReserveN(now, 1)
		if wait := r.DelayFrom(now); wait > 0 {
			// Not yet: look again when a creation is allowed, without
			// holding the allowance meanwhile.
			r.CancelAt(now)
			t.queue.AddAfter(legacyTrackingKey, wait)
			return nil
		}
		if _, err := configMaps.Create(ctx, want, metav1.CreateOptions{}); err != nil {
			if apierrors.IsAlreadyExists(err) {
				return nil
			}
			r.CancelAt(now)
			return fmt.Errorf("creating kube-system/%s: %w", legacyTrackingConfigMap, err)
		}
		return nil
	}
	if _, err := configMaps.Update(ctx, want, metav1.UpdateOptions{}); err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			// The informer brings the newer state, which is synced again.
			return nil
		}
		return fmt.Errorf("setting the since date of kube-system/%s: %w", legacyTrackingConfigMap, err)
	}
	return nil
}

// runLegacyTokenTracking runs the controller through the loopback client
// until ctx ends; Run starts it once it listens.
//
// Once the controller has ended (no request of it in flight) the client's
// connections are closed: an HTTP/2 connection the client leaves open
// holds the server's graceful shutdown for HTTP/2's GOAWAY grace period
// (a second), after which the server cuts it.
func (s *Server) runLegacyTokenTracking(ctx context.Context) {
	cfg, conns, err := s.loopbackRESTConfig()
	if err == nil {
		var client *kubernetes.Clientset
		if client, err = kubernetes.NewForConfig(cfg); err == nil {
			newLegacyTokenTracking(client, clock.RealClock{}, newLegacyTrackingLimiter(), s.log).run(ctx)
			conns.closeAll()
			return
		}
	}
	s.log.Error("starting the legacy service account token tracking controller", "err", err)
}

// loopbackRESTConfig is a client configuration calling this server as
// itself (LoopbackClient at LoopbackAddress), as kube-apiserver's
// loopback client configuration, and the connections its transport
// dials. The transport is the configuration's own, not one of client-go's
// process-wide cached ones, so that it ends with its user. An error until
// Run listens.
func (s *Server) loopbackRESTConfig() (*rest.Config, *dialedConns, error) {
	addr, err := s.LoopbackAddress()
	if err != nil {
		return nil, nil, err
	}
	tlsConfig, token := s.LoopbackClient()
	conns := &dialedConns{dialer: &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}}
	// The settings client-go gives the transports it makes.
	transport := utilnet.SetTransportDefaults(&http.Transport{
		TLSClientConfig:     tlsConfig,
		TLSHandshakeTimeout: 10 * time.Second,
		MaxIdleConnsPerHost: 25,
		DialContext:         conns.dial,
	})
	return &rest.Config{
		Host:        "https://" + addr,
		BearerToken: token,
		// kube-apiserver's loopback client's (its writes' field manager
		// is kube-apiserver), whatever this binary is called.
		UserAgent: loopbackUserAgent(s.cfg.GitVersion),
		Transport: transport,
		// Not rate limited on the client side, as kube-apiserver's
		// loopback configuration.
		QPS: -1,
	}, conns, nil
}

// dialedConns dials connections and keeps those still open, so that its
// owner can close them all when it ends (a transport's
// CloseIdleConnections leaves an HTTP/2 connection open while a stream
// of it is still being torn down).
type dialedConns struct {
	dialer *net.Dialer
	mu     sync.Mutex
	open   map[*dialedConn]struct{}
	closed bool
}

// dialedConn is a connection of a dialedConns, forgotten when closed.
type dialedConn struct {
	net.Conn
	owner *dialedConns
	once  sync.Once
}

// dial is a DialContext dialing through d.dialer; after closeAll it is
// refused.
func (d *dialedConns) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := d.dialer.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	dc := &dialedConn{Conn: c, owner: d}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		_ = c.Close()
		return nil, net.ErrClosed
	}
	if d.open == nil {
		d.open = map[*dialedConn]struct{}{}
	}
	d.open[dc] = struct{}{}
	return dc, nil
}

// closeAll closes the open connections and refuses new ones.
func (d *dialedConns) closeAll() {
	d.mu.Lock()
	d.closed = true
	open := d.open
	d.open = nil
	d.mu.Unlock()
	for c := range open {
		_ = c.Close()
	}
}

func (c *dialedConn) Close() error {
	var err error
	c.once.Do(func() {
		c.owner.mu.Lock()
		delete(c.owner.open, c)
		c.owner.mu.Unlock()
		err = c.Conn.Close()
	})
	return err
}
