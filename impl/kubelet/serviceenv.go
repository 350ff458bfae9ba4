package kubelet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// Service environment variables, as upstream's kubelet gives every
// container: the API server's own service ("kubernetes" in "default")
// always, and, when the pod's spec.enableServiceLinks is true (the
// default), every service with a cluster IP in the pod's namespace, in the
// docker-link style. The container's own env and envFrom win over them;
// its env values may refer to them with $(NAME).

// masterServiceName is the API server's service, in masterServiceNamespace
// (upstream kubelet's --master-service-namespace default).
const (
	masterServiceName      = "kubernetes"
	masterServiceNamespace = metav1.NamespaceDefault
)

// errServicesNotSynced is upstream's error while the kubelet's service
// informer has not listed services once; the container waits with
// CreateContainerConfigError and is retried.
var errServicesNotSynced = errors.New("services have not yet been read at least once, cannot construct envvars")

// ServiceEnv returns the service variables of a container in a pod of
// namespace (sorted by name). services is every service the kubelet knows
// (any namespace); services without a cluster IP (headless "None",
// ExternalName) give none. The "kubernetes" service of "default" is always
// included; the namespace's services only if enableServiceLinks. A service
// of the pod's namespace named "kubernetes" takes the place of default's.
func ServiceEnv(services []*v1.Service, namespace string, enableServiceLinks bool) []EnvVar {
	chosen := map[string]*v1.Service{}
	for _, s := range services {
		if !serviceIPSet(s) {
			continue
		}
		switch {
		case s.Namespace == masterServiceNamespace && s.Name == masterServiceName:
			if _, ok := chosen[s.Name]; !ok {
				chosen[s.Name] = s
			}
		case s.Namespace == namespace && enableServiceLinks:
			chosen[s.Name] = s
		}
	}
	var out []EnvVar
	for _, s := range chosen {
		out = append(out, serviceVars(s)...)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// serviceIPSet: the service has a cluster IP (not headless, not
// ExternalName).
func serviceIPSet(s *v1.Service) bool {
	return s.Spec.Type != v1.ServiceTypeExternalName && s.Spec.ClusterIP != "" && s.Spec.ClusterIP != v1.ClusterIPNone
}

// serviceVars are one service's variables: {SVC}_SERVICE_HOST,
// {SVC}_SERVICE_PORT (the first port) and _SERVICE_PORT_{NAME} per named
// port, then the docker-link ones: {SVC}_PORT (the first port's URL) and
// per port {SVC}_PORT_{port}_{PROTO} with _PROTO, _PORT and _ADDR.
func serviceVars(s *v1.Service) []EnvVar {
	prefix := envVarName(s.Name)
	ip := s.Spec.ClusterIP
	out := []EnvVar{{Name: prefix + "_SERVICE_HOST", Value: ip}}
	if len(s.Spec.Ports) == 0 {
		return out
	}
	portVar := prefix + "_SERVICE_PORT"
	out = append(out, EnvVar{Name: portVar, Value: strconv.Itoa(int(s.Spec.Ports[0].Port))})
	for _, p := range s.Spec.Ports {
		if p.Name != "" {
			out = append(out, EnvVar{Name: portVar + "_" + envVarName(p.Name), Value: strconv.Itoa(int(p.Port))})
		}
	}
	for i, p := range s.Spec.Ports {
		proto := string(p.Protocol)
		if proto == "" {
			proto = string(v1.ProtocolTCP)
		}
		lower := strings.ToLower(proto)
		port := strconv.Itoa(int(p.Port))
		url := lower + "://" + net.JoinHostPort(ip, port)
		if i == 0 {
			out = append(out, EnvVar{Name: prefix + "_PORT", Value: url})
		}
		pp := prefix + "_PORT_" + port + "_" + strings.ToUpper(proto)
		out = append(out,
			EnvVar{Name: pp, Value: url},
			EnvVar{Name: pp + "_PROTO", Value: lower},
			EnvVar{Name: pp + "_PORT", Value: port},
			EnvVar{Name: pp + "_ADDR", Value: ip})
	}
	return out
}

// envVarName upper-cases a service or port name and turns '-' into '_'.
func envVarName(s string) string {
	return strings.ToUpper(strings.ReplaceAll(s, "-", "_"))
}

// enableServiceLinks is the pod's spec.enableServiceLinks; unset means the
// API default (true).
func enableServiceLinks(pod *v1.Pod) bool {
	return pod.Spec.EnableServiceLinks == nil || *pod.Spec.EnableServiceLinks
}

// serviceSource is what the kubelet lists services from while it runs.
type serviceSource interface {
	HasSynced() bool
	// Synced is closed once the services have been listed.
	Synced() <-chan struct{}
	List() ([]*v1.Service, error)
}

// serviceSyncGrace is how long building a container's environment waits
// for the first list of services before failing with
// errServicesNotSynced (it normally takes milliseconds at kubelet start).
const serviceSyncGrace = time.Second

// sharedServices is one service informer shared by the kubelets of a
// process that share a clientset (kubeproof up runs many simulated nodes
// over one), so a node costs no watch of its own.
type sharedServices struct {
	lister   corelisters.ServiceLister
	synced   func() bool
	syncedCh chan struct{}
	cancel   context.CancelFunc
	stop     func() // waits for the informer's goroutines
}

func (s *sharedServices) HasSynced() bool { return s.synced() }

func (s *sharedServices) Synced() <-chan struct{} { return s.syncedCh }

func (s *sharedServices) List() ([]*v1.Service, error) {
	return s.lister.List(labels.Everything())
}

// servicesByClient are the running service informers, per clientset.
var servicesByClient perClient[struct{}, *sharedServices]

// acquireServices returns the service informer of client, starting it on
// first use; release stops it when its last user is done and waits for its
// goroutines. Kubelets wait for it to sync once before building a
// container's environment (errServicesNotSynced).
func acquireServices(client kubernetes.Interface) (src serviceSource, release func()) {
	s, drop := servicesByClient.acquire(client, struct{}{}, func() *sharedServices { return startServices(client) })
	return s, func() {
		if drop() {
			s.cancel()
			s.stop()
		}
	}
}

// startServices runs a service informer of client.
func startServices(client kubernetes.Interface) *sharedServices {
	ctx, cancel := context.WithCancel(context.Background())
	factory := informers.NewSharedInformerFactory(client, 0)
	inf := factory.Core().V1().Services()
	s := &sharedServices{lister: inf.Lister(), synced: inf.Informer().HasSynced,
		syncedCh: make(chan struct{}), cancel: cancel}
	factory.Start(ctx.Done())
	waited := make(chan struct{})
	go func() {
		defer close(waited)
		if cache.WaitForCacheSync(ctx.Done(), s.synced) {
			close(s.syncedCh)
		}
	}()
	s.stop = func() {
		factory.Shutdown()
		<-waited
	}
	return s
}

// resyncWhenServicesSynced enqueues every pod once src has listed the
// services, so containers that failed for want of them are retried at
// once instead of after the back-off base period.
func (k *Kubelet) resyncWhenServicesSynced(ctx context.Context, src serviceSource) {
	select {
	case <-src.Synced():
		k.enqueueAll()
	case <-ctx.Done():
	}
}

// serviceEnv is the service variables of a container of pod: from the
// running kubelet's service informer (an error until it has synced once),
// or, when the kubelet is driven without Run, read through the API.
func (k *Kubelet) serviceEnv(ctx context.Context, pod *v1.Pod) ([]EnvVar, error) {
	links := enableServiceLinks(pod)
	if p := k.services.Load(); p != nil {
		src := *p
		if !src.HasSynced() {
			grace := time.NewTimer(serviceSyncGrace)
			defer grace.Stop()
			select {
			case <-src.Synced():
			case <-grace.C:
				return nil, errServicesNotSynced
			case <-ctx.Done():
				return nil, errServicesNotSynced
			}
		}
		all, err := src.List()
		if err != nil {
			return nil, fmt.Errorf("listing services: %w", err)
		}
		return ServiceEnv(all, pod.Namespace, links), nil
	}
	var all []*v1.Service
	master, err := k.client.CoreV1().Services(masterServiceNamespace).Get(ctx, masterServiceName, metav1.GetOptions{})
	switch {
	case err == nil:
		all = append(all, master)
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("reading service %s/%s: %w", masterServiceNamespace, masterServiceName, err)
	}
	if links {
		list, err := k.client.CoreV1().Services(pod.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("listing services in %s: %w", pod.Namespace, err)
		}
		for i := range list.Items {
			all = append(all, &list.Items[i])
		}
	}
	return ServiceEnv(all, pod.Namespace, links), nil
}
