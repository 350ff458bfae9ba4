package ipallocator_test

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeproof/kubeproof/impl/registry/ipallocator"
	"github.com/kubeproof/kubeproof/impl/storage"
	"github.com/kubeproof/kubeproof/impl/storage/storagebackend"
)

// serviceEnv is a ServiceStorage over fresh services and records stores
// with a /28 (14 addresses) and 30000-30009.
type serviceEnv struct {
	s       *ipallocator.ServiceStorage
	records storage.Interface
	// inner is the services store under s, written to behind the
	// allocator's back.
	inner storage.Interface
}

func newServiceEnv(t *testing.T) serviceEnv {
	t.Helper()
	prefix := freshPrefix()
	f := storagebackend.NewFactory(storagebackend.Config{Client: etcdServer.Client(), Prefix: prefix})
	t.Cleanup(f.Close)
	inner, _, err := f.New(storage.ResourceConfig{
		GroupResource:  schema.GroupResource{Resource: "services"},
		StorageVersion: corev1.SchemeGroupVersion, ResourcePrefix: "/services",
		NewFunc:     func() runtime.Object { return &corev1.Service{} },
		NewListFunc: func() runtime.Object { return &corev1.ServiceList{} },
	})
	if err != nil {
		t.Fatal(err)
	}
	records := newStore(t, prefix, false)
	cidr, err := ipallocator.ParseCIDR("10.0.0.0/28")
	if err != nil {
		t.Fatal(err)
	}
	pr, err := ipallocator.ParsePortRange("30000-30009")
	if err != nil {
		t.Fatal(err)
	}
	return serviceEnv{s: ipallocator.NewServiceStorage(inner, []*ipallocator.IPs{ipallocator.NewIPs(records, cidr)}, ipallocator.NewPorts(records, pr), nil), records: records, inner: inner}
}

// snapshot is every allocation record with its resourceVersion.
func (e serviceEnv) snapshot(t *testing.T) map[string]string {
	t.Helper()
	var list ipallocator.RecordList
	if err := e.records.GetList(context.Background(), "/ranges", storage.ListOptions{Recursive: true, Predicate: storage.Everything()}, &list); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, r := range list.Items {
		out[r.Name] = r.ResourceVersion + "/" + r.Range + "/" + string(r.Data)
	}
	return out
}

func (e serviceEnv) unchanged(t *testing.T, before map[string]string, what string) {
	t.Helper()
	after := e.snapshot(t)
	if len(after) != len(before) {
		t.Fatalf("%s changed the allocation records: %v -> %v", what, before, after)
	}
	for k, v := range before {
		if after[k] != v {
			t.Fatalf("%s changed allocation record %s", what, k)
		}
	}
}

func svc(name string, typ corev1.ServiceType, clusterIP string, nodePorts ...int32) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec:       corev1.ServiceSpec{Type: typ, ClusterIP: clusterIP},
	}
	if clusterIP != "" {
		s.Spec.ClusterIPs = []string{clusterIP}
	}
	for i, p := range nodePorts {
		s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: string(rune('a' + i)), Port: 80 + int32(i), NodePort: p})
	}
	if len(nodePorts) == 0 {
		s.Spec.Ports = []corev1.ServicePort{{Port: 80}}
	}
	return s
}

func (e serviceEnv) create(t *testing.T, s *corev1.Service) *corev1.Service {
	t.Helper()
	out := &corev1.Service{}
	if err := e.s.Create(context.Background(), "/services/default/"+s.Name, s, out); err != nil {
		t.Fatal(err)
	}
	return out
}

func dryCreate(t *testing.T, e serviceEnv, s *corev1.Service) (*corev1.Service, error) {
	t.Helper()
	out, err := e.s.DryRunCreate(context.Background(), "/services/default/"+s.Name, s)
	if err != nil {
		return nil, err
	}
	return out.(*corev1.Service), nil
}

// A dry-run create shows the ClusterIP and NodePorts a create would take,
// free ones, and writes no allocation record; a real create may then get
// the very values shown.
func TestDryRunCreateShowsFreeValuesAndReservesNothing(t *testing.T) {
	e := newServiceEnv(t)
	taken := e.create(t, svc("taken", corev1.ServiceTypeNodePort, "", 0))
	before := e.snapshot(t)
	cidr := netip.MustParsePrefix("10.0.0.0/28")
	for range 20 {
		got, err := dryCreate(t, e, svc("x", corev1.ServiceTypeNodePort, "", 0, 0))
		if err != nil {
			t.Fatal(err)
		}
		ip, err := netip.ParseAddr(got.Spec.ClusterIP)
		if err != nil || !cidr.Contains(ip) || ip == cidr.Addr() || len(got.Spec.ClusterIPs) != 1 || got.Spec.ClusterIPs[0] != got.Spec.ClusterIP {
			t.Fatalf("dry run clusterIP %q %v", got.Spec.ClusterIP, got.Spec.ClusterIPs)
		}
		if got.Spec.ClusterIP == taken.Spec.ClusterIP {
			t.Fatalf("dry run showed the taken address %s", got.Spec.ClusterIP)
		}
		a, b := got.Spec.Ports[0].NodePort, got.Spec.Ports[1].NodePort
		if a < 30000 || a > 30009 || b < 30000 || b > 30009 || a == b || a == taken.Spec.Ports[0].NodePort || b == taken.Spec.Ports[0].NodePort {
			t.Fatalf("dry run node ports %d, %d (taken %d)", a, b, taken.Spec.Ports[0].NodePort)
		}
	}
	e.unchanged(t, before, "a dry-run create")

	// Not reserved: a real create asking for what a dry run showed gets it.
	shown, err := dryCreate(t, e, svc("y", corev1.ServiceTypeNodePort, "", 0))
	if err != nil {
		t.Fatal(err)
	}
	real := e.create(t, svc("y", corev1.ServiceTypeNodePort, shown.Spec.ClusterIP, shown.Spec.Ports[0].NodePort))
	if real.Spec.ClusterIP != shown.Spec.ClusterIP || real.Spec.Ports[0].NodePort != shown.Spec.Ports[0].NodePort {
		t.Fatalf("real create got %s:%d, dry run showed %s:%d", real.Spec.ClusterIP, real.Spec.Ports[0].NodePort, shown.Spec.ClusterIP, shown.Spec.Ports[0].NodePort)
	}
}

// Requested values are checked as a real create checks them: the same 422
// for a taken or out-of-range address or port, and nothing written.
func TestDryRunCreateChecksRequestedValues(t *testing.T) {
	e := newServiceEnv(t)
	taken := e.create(t, svc("taken", corev1.ServiceTypeNodePort, "", 0))
	for _, tc := range []struct {
		name string
		svc  *corev1.Service
		want string
	}{
		{"taken IP", svc("a", corev1.ServiceTypeClusterIP, taken.Spec.ClusterIP), "provided IP is already allocated"},
		{"IP out of range", svc("b", corev1.ServiceTypeClusterIP, "10.1.0.1"), "not in the valid range"},
		{"broadcast address", svc("c", corev1.ServiceTypeClusterIP, "10.0.0.15"), "not in the valid range"},
		{"taken port", svc("d", corev1.ServiceTypeNodePort, "", taken.Spec.Ports[0].NodePort), "provided port is already allocated"},
		{"port out of range", svc("e", corev1.ServiceTypeNodePort, "", 31000), "not in the valid range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := e.snapshot(t)
			_, dryErr := dryCreate(t, e, tc.svc)
			if !apierrors.IsInvalid(dryErr) || !strings.Contains(dryErr.Error(), tc.want) {
				t.Fatalf("dry run: %v, want 422 %q", dryErr, tc.want)
			}
			e.unchanged(t, before, "a failed dry-run create")
			realErr := e.s.Create(context.Background(), "/services/default/"+tc.svc.Name, tc.svc, &corev1.Service{})
			if realErr == nil || realErr.Error() != dryErr.Error() {
				t.Fatalf("dry run %q, real create %v: want the same error", dryErr, realErr)
			}
		})
	}
	// A requested port is not also picked for another port of the service.
	free := int32(30000)
	for free == taken.Spec.Ports[0].NodePort {
		free++
	}
	for range 20 {
		got, err := dryCreate(t, e, svc("f", corev1.ServiceTypeNodePort, "", 0, free))
		if err != nil {
			t.Fatal(err)
		}
		if p := got.Spec.Ports[0].NodePort; p == free || p == taken.Spec.Ports[0].NodePort {
			t.Fatalf("dynamic port %d: requested %d, taken %d", p, free, taken.Spec.Ports[0].NodePort)
		}
	}
	_, err := dryCreate(t, e, svc("g", corev1.ServiceTypeNodePort, "", free, free))
	if err != nil {
		t.Fatalf("a port asked for twice is one allocation, as in a real create: %v", err)
	}
}

// A dry-run update shows a type change's result (a NodePort allocated for
// ClusterIP -> NodePort, dropped for NodePort -> ClusterIP) and changes no
// record: the dropped port stays held by the stored service.
func TestDryRunUpdateChangesNoRecords(t *testing.T) {
	e := newServiceEnv(t)
	ctx := context.Background()
	cip := e.create(t, svc("cip", corev1.ServiceTypeClusterIP, ""))
	np := e.create(t, svc("np", corev1.ServiceTypeNodePort, "", 0))
	before := e.snapshot(t)

	toNodePort := cip.DeepCopy()
	toNodePort.Spec.Type = corev1.ServiceTypeNodePort
	out, err := e.s.DryRunUpdate(ctx, "/services/default/cip", cip, toNodePort)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*corev1.Service)
	if p := got.Spec.Ports[0].NodePort; p < 30000 || p > 30009 || p == np.Spec.Ports[0].NodePort || got.Spec.ClusterIP != cip.Spec.ClusterIP {
		t.Fatalf("ClusterIP -> NodePort dry run: %s:%d", got.Spec.ClusterIP, p)
	}

	toClusterIP := np.DeepCopy()
	toClusterIP.Spec.Type = corev1.ServiceTypeClusterIP
	out, err = e.s.DryRunUpdate(ctx, "/services/default/np", np, toClusterIP)
	if err != nil {
		t.Fatal(err)
	}
	if p := out.(*corev1.Service).Spec.Ports[0].NodePort; p != 0 {
		t.Fatalf("NodePort -> ClusterIP dry run kept node port %d", p)
	}
	// Asking for a taken port in an update is refused as a real update is.
	steal := cip.DeepCopy()
	steal.Spec.Type = corev1.ServiceTypeNodePort
	steal.Spec.Ports[0].NodePort = np.Spec.Ports[0].NodePort
	if _, err := e.s.DryRunUpdate(ctx, "/services/default/cip", cip, steal); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "provided port is already allocated") {
		t.Fatalf("dry-run update to a taken port: %v", err)
	}
	e.unchanged(t, before, "dry-run updates")
	if has, err := e.s.Ports().Has(ctx, int(np.Spec.Ports[0].NodePort)); err != nil || !has {
		t.Fatalf("the stored NodePort service's port is no longer held after a dry-run type change: %v %v", has, err)
	}
}

// A request's allocation (BeginWrite) takes before validation what
// InitCreate fills, keeps it once Create wrote the service, and gives it
// back when the request ends without a write; a dry run's takes nothing.
func TestBeginWriteTakesBeforeTheWrite(t *testing.T) {
	e := newServiceEnv(t)
	ctx := context.Background()
	ips := e.s.IPs()
	newSvc := func(name string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}}}}
	}
	has := func(svc *corev1.Service) (bool, bool) {
		ip, err := ips.Has(ctx, netip.MustParseAddr(svc.Spec.ClusterIP))
		if err != nil {
			t.Fatal(err)
		}
		port, err := e.s.Ports().Has(ctx, int(svc.Spec.Ports[0].NodePort))
		if err != nil {
			t.Fatal(err)
		}
		return ip, port
	}

	// Refused after InitCreate (validation, admission): given back.
	refused := newSvc("refused")
	scope, finish := e.s.BeginWrite(ctx, false)
	if err := e.s.InitCreate(scope, refused); err != nil {
		t.Fatal(err)
	}
	if ip, port := has(refused); !ip || !port {
		t.Fatalf("InitCreate took %s and %d: %v %v", refused.Spec.ClusterIP, refused.Spec.Ports[0].NodePort, ip, port)
	}
	finish()
	if ip, port := has(refused); ip || port {
		t.Fatalf("finish without a write kept %v %v", ip, port)
	}

	// Written: kept, and not taken twice.
	written := newSvc("written")
	scope, finish = e.s.BeginWrite(ctx, false)
	if err := e.s.InitCreate(scope, written); err != nil {
		t.Fatal(err)
	}
	if err := e.s.Create(scope, "/services/default/written", written, &corev1.Service{}); err != nil {
		t.Fatal(err)
	}
	finish()
	if ip, port := has(written); !ip || !port {
		t.Fatalf("a written service's values were given back: %v %v", ip, port)
	}

	// A dry run picks values and takes none.
	before := e.snapshot(t)
	dry := newSvc("dry")
	scope, finish = e.s.BeginWrite(ctx, true)
	if err := e.s.InitCreate(scope, dry); err != nil {
		t.Fatal(err)
	}
	if dry.Spec.ClusterIP == "" || dry.Spec.Ports[0].NodePort == 0 {
		t.Fatalf("a dry run filled %+v", dry.Spec)
	}
	out, err := e.s.DryRunCreate(scope, "/services/default/dry", dry)
	if err != nil || out.(*corev1.Service).Spec.ClusterIP != dry.Spec.ClusterIP {
		t.Fatalf("DryRunCreate = %v, %v", out, err)
	}
	finish()
	e.unchanged(t, before, "a dry run")
}
