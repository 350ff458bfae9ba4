package ipallocator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubeproof/kubeproof/impl/ipfamily"
	"github.com/kubeproof/kubeproof/impl/registry"
	"github.com/kubeproof/kubeproof/impl/storage"
)

// ServiceStorage is the storage of core/v1 Services with ClusterIP and
// NodePort allocation: the API handler has it fill a service's IP
// families for the cluster (registry.InitServiceIPFamilies) and take its
// addresses and ports before it validates the service (BeginWrite,
// InitCreate, InitUpdate), as kube-apiserver's BeginCreate/BeginUpdate; a
// create takes the addresses, one per family, and ports the service asks
// for (or free ones), and gives them back if the request does not end in
// a write; an update does the same for what the new spec adds (a second
// family: an upgrade) and, once written, releases what it dropped (a
// downgrade, a move to ExternalName); a delete releases everything the
// service held. A write that does not come through the handler allocates
// in Create and GuaranteedUpdate, at the write. A dry run (DryRunCreate,
// DryRunUpdate) shows what a write would take without taking it. Reads and
// watches go straight to the inner store.
type ServiceStorage struct {
	inner storage.Interface
	// ips are the ClusterIP allocators, one per family, the primary
	// (--service-cluster-ip-range's first) first.
	ips   []*IPs
	ports *Ports
	log   *slog.Logger
}

var _ storage.Interface = (*ServiceStorage)(nil)

// NewServiceStorage wraps the services store inner; ips are the
// allocators of the service ranges, one or two of different families, the
// primary first.
func NewServiceStorage(inner storage.Interface, ips []*IPs, ports *Ports, log *slog.Logger) *ServiceStorage {
	if log == nil {
		log = slog.Default()
	}
	return &ServiceStorage{inner: inner, ips: ips, ports: ports, log: log}
}

// IPs is the primary family's ClusterIP allocator.
func (s *ServiceStorage) IPs() *IPs { return s.ips[0] }

// AllIPs are the ClusterIP allocators, the primary family's first.
func (s *ServiceStorage) AllIPs() []*IPs { return s.ips }

// Families are the families the cluster serves, the primary first.
func (s *ServiceStorage) Families() []corev1.IPFamily {
	out := make([]corev1.IPFamily, len(s.ips))
	for i, a := range s.ips {
		out[i] = a.Family()
	}
	return out
}

// ipsFor is the allocator of family f (nil: the cluster does not serve f).
func (s *ServiceStorage) ipsFor(f corev1.IPFamily) *IPs {
	for _, a := range s.ips {
		if a.Family() == f {
			return a
		}
	}
	return nil
}

// ipsOf is the allocator of ip's family (nil: not served).
func (s *ServiceStorage) ipsOf(ip netip.Addr) *IPs {
	return s.ipsFor(ipfamily.OfAddr(ip))
}

// Ports is the NodePort allocator.
func (s *ServiceStorage) Ports() *Ports { return s.ports }

// holdings is what one service holds in the allocators.
type holdings struct {
	ips   []netip.Addr
	ports []int
}

func held(svc *corev1.Service) holdings {
	var h holdings
	if registry.ServiceNeedsClusterIP(svc) {
		for _, s := range svc.Spec.ClusterIPs {
			if ip, err := netip.ParseAddr(s); err == nil {
				h.ips = append(h.ips, ip)
			}
		}
		if len(svc.Spec.ClusterIPs) == 0 {
			if ip, err := netip.ParseAddr(svc.Spec.ClusterIP); err == nil {
				h.ips = append(h.ips, ip)
			}
		}
	}
	seen := map[int]bool{}
	if registry.ServiceNeedsNodePorts(svc) {
		for _, p := range svc.Spec.Ports {
			if p.NodePort != 0 && !seen[int(p.NodePort)] {
				seen[int(p.NodePort)] = true
				h.ports = append(h.ports, int(p.NodePort))
			}
		}
	}
	if registry.ServiceNeedsHealthCheckNodePort(svc) && svc.Spec.HealthCheckNodePort != 0 && !seen[int(svc.Spec.HealthCheckNodePort)] {
		h.ports = append(h.ports, int(svc.Spec.HealthCheckNodePort))
	}
	return h
}

func (h holdings) hasIP(ip netip.Addr) bool {
	for _, x := range h.ips {
		if x == ip {
			return true
		}
	}
	return false
}

func (h holdings) hasPort(p int) bool {
	for _, x := range h.ports {
		if x == p {
			return true
		}
	}
	return false
}

// transaction records what one attempt took, to give it back when the
// attempt does not end in a write. A dry run's transaction takes nothing:
// it checks requested values as a real one would and picks free ones,
// remembering them only so that one service does not get a value twice.
type transaction struct {
	s      *ServiceStorage
	dryRun bool
	// beforeValidation: the service is not validated yet (a request's
	// allocation, BeginWrite). What validation refuses is left for it to
	// refuse: no update checks, no NodePort dropped, nothing taken for a
	// changed address or health check NodePort the update may not change.
	beforeValidation bool
	ips              []netip.Addr
	ports            []int
}

// takeIP allocates ip from a (a dry run: checks that it could).
func (t *transaction) takeIP(ctx context.Context, a *IPs, ip netip.Addr) error {
	var err error
	switch {
	case !t.dryRun:
		err = a.Allocate(ctx, ip)
	case slices.Contains(t.ips, ip):
		err = ErrAllocated
	default:
		err = a.CheckAllocate(ctx, ip)
	}
	if err == nil {
		t.ips = append(t.ips, ip)
	}
	return err
}

// nextIP allocates a free address of a (a dry run: picks one).
func (t *transaction) nextIP(ctx context.Context, a *IPs) (netip.Addr, error) {
	var ip netip.Addr
	var err error
	if t.dryRun {
		ip, err = a.PeekNext(ctx, t.ips)
	} else {
		ip, err = a.AllocateNext(ctx)
	}
	if err == nil {
		t.ips = append(t.ips, ip)
	}
	return ip, err
}

// takePort allocates port (a dry run: checks that it could).
func (t *transaction) takePort(ctx context.Context, port int) error {
	var err error
	switch {
	case !t.dryRun:
		err = t.s.ports.Allocate(ctx, port)
	case slices.Contains(t.ports, port):
		err = ErrAllocated
	default:
		err = t.s.ports.CheckAllocate(ctx, port)
	}
	if err == nil {
		t.ports = append(t.ports, port)
	}
	return err
}

// nextPort allocates a free port (a dry run: picks one).
func (t *transaction) nextPort(ctx context.Context) (int, error) {
	var p int
	var err error
	if t.dryRun {
		p, err = t.s.ports.PeekNext(ctx, t.ports)
	} else {
		p, err = t.s.ports.AllocateNext(ctx)
	}
	if err == nil {
		t.ports = append(t.ports, p)
	}
	return p, err
}

func (t *transaction) rollback(ctx context.Context) {
	if t.dryRun {
		t.ips, t.ports = nil, nil
		return
	}
	// Releasing must happen even when the request's context ended.
	ctx = context.WithoutCancel(ctx)
	for _, ip := range t.ips {
		if err := t.s.releaseIP(ctx, ip); err != nil {
			t.s.log.Error("releasing a ClusterIP after a failed write", "ip", ip, "err", err)
		}
	}
	for _, p := range t.ports {
		if err := t.s.ports.Release(ctx, p); err != nil {
			t.s.log.Error("releasing a NodePort after a failed write", "port", p, "err", err)
		}
	}
	t.ips, t.ports = nil, nil
}

// pendingKey is the context key of an API request's allocation
// (BeginWrite).
type pendingKey struct{}

// pending is what one API request took for the service it writes: taken
// before the service is validated (InitCreate, InitUpdate), kept once the
// store wrote it (written), given back by the request's finish otherwise.
type pending struct {
	t       *transaction
	written bool
}

// pendingIn is the request's allocation in ctx, if BeginWrite of s opened
// one.
func (s *ServiceStorage) pendingIn(ctx context.Context) *pending {
	if p, ok := ctx.Value(pendingKey{}).(*pending); ok && p.t.s == s {
		return p
	}
	return nil
}

// BeginWrite opens an API request's allocation (endpoints.FieldInitializer),
// as kube-apiserver's BeginCreate and BeginUpdate: InitCreate and
// InitUpdate called with the returned context take the ClusterIPs and
// NodePorts the service needs before it is validated, so validating
// admission sees them and a taken or out-of-range value is the request's
// error before any validation; Create and GuaranteedUpdate with that
// context write what was taken without taking it again. finish, called
// once the request is over, gives back what was taken unless the store
// wrote it. A dry run's allocation picks and checks values without taking
// any.
func (s *ServiceStorage) BeginWrite(ctx context.Context, dryRun bool) (context.Context, func()) {
	p := &pending{t: &transaction{s: s, dryRun: dryRun, beforeValidation: true}}
	return context.WithValue(ctx, pendingKey{}, p), func() {
		if !p.written {
			p.t.rollback(ctx)
		}
	}
}

// InitCreate fills a service's ipFamilyPolicy and ipFamilies for the
// cluster's families before the API handler validates it
// (endpoints.FieldInitializer), as kube-apiserver's BeginCreate does: a
// request the cluster cannot serve gets those errors alone, before any
// other validation. In a request's allocation (BeginWrite) it then takes
// the service's ClusterIPs and NodePorts, filling the ones it picks.
func (s *ServiceStorage) InitCreate(ctx context.Context, obj runtime.Object) error {
	svc, ok := obj.(*corev1.Service)
	if !ok {
		return nil
	}
	if p := s.pendingIn(ctx); p != nil {
		p.t.rollback(ctx)
		return p.t.allocate(ctx, svc, nil) // fills the families first
	}
	return s.initIPFamilies(svc, nil)
}

// InitUpdate is InitCreate for an update of old: the stored policy, an
// upgrade to dual-stack, a downgrade with SingleStack; in a request's
// allocation it takes what the new spec adds (an update retried on a
// conflict gives back the earlier attempt's first). What the new spec
// drops is released only once the update is written.
func (s *ServiceStorage) InitUpdate(ctx context.Context, obj, old runtime.Object) error {
	svc, ok1 := obj.(*corev1.Service)
	oldSvc, ok2 := old.(*corev1.Service)
	if !ok1 || !ok2 {
		return nil
	}
	if p := s.pendingIn(ctx); p != nil {
		p.t.rollback(ctx)
		return p.t.allocate(ctx, svc, oldSvc) // fills the families first
	}
	return s.initIPFamilies(svc, oldSvc)
}

func (s *ServiceStorage) initIPFamilies(svc, old *corev1.Service) error {
	if errs := registry.InitServiceIPFamilies(svc, old, s.Families()); len(errs) > 0 {
		return invalidService(svc, errs)
	}
	return nil
}

// allocate fills svc's IP families (svc is changed in place; old is the
// stored service on update, nil on create) and takes every ClusterIP, one
// per family in svc's ipFamilies, and NodePort it needs that old does not
// already hold. Through the API handler InitCreate and InitUpdate run it
// before validation (the update is then checked by the registry's update
// validation); a write that does not come through the handler runs it at
// the write, where filling families an earlier request filled changes
// nothing.
func (t *transaction) allocate(ctx context.Context, svc, old *corev1.Service) error {
	spec := field.NewPath("spec")
	if err := t.s.initIPFamilies(svc, old); err != nil {
		return err
	}
	var before holdings
	// kept is how many of svc's families keep the stored service's
	// addresses: an update allocates only an upgrade's new family, or all
	// of them for a service leaving ExternalName.
	kept := 0
	if old != nil {
		if !t.beforeValidation {
			if errs := registry.ValidateServiceIPFamiliesUpdate(svc, old); len(errs) > 0 {
				return invalidService(svc, errs)
			}
		}
		before = held(old)
		if old.Spec.Type != corev1.ServiceTypeExternalName {
			kept = len(old.Spec.IPFamilies)
		}
	}
	if registry.ServiceNeedsClusterIP(svc) {
		if err := t.allocateClusterIPs(ctx, svc, before, kept); err != nil {
			return err
		}
	}
	taken := map[int]bool{}
	if registry.ServiceNeedsNodePorts(svc) {
		// First the ports asked for, so a dynamic pick cannot take them.
		for i := range svc.Spec.Ports {
			p := int(svc.Spec.Ports[i].NodePort)
			if p == 0 || taken[p] {
				continue
			}
			taken[p] = true
			if before.hasPort(p) {
				continue
			}
			if err := t.takePort(ctx, p); err != nil {
				return t.invalid(svc, field.Invalid(spec.Child("ports").Index(i).Child("nodePort"), p,
					allocError(err, t.s.ports.Range().String(), "ports")), err)
			}
		}
		for i := range svc.Spec.Ports {
			if svc.Spec.Ports[i].NodePort != 0 {
				continue
			}
			p, err := t.nextPort(ctx)
			if err != nil {
				return rangeFull(svc, "nodePort", err)
			}
			svc.Spec.Ports[i].NodePort = int32(p)
		}
	} else if !t.beforeValidation {
		for i := range svc.Spec.Ports {
			svc.Spec.Ports[i].NodePort = 0
		}
	}
	if registry.ServiceNeedsHealthCheckNodePort(svc) {
		p := int(svc.Spec.HealthCheckNodePort)
		path := spec.Child("healthCheckNodePort")
		switch {
		case p == 0:
			got, err := t.nextPort(ctx)
			if err != nil {
				return rangeFull(svc, "nodePort", err)
			}
			svc.Spec.HealthCheckNodePort = int32(got)
		case !before.hasPort(p) && !taken[p] && !(old != nil && registry.ServiceNeedsHealthCheckNodePort(old)):
			if err := t.takePort(ctx, p); err != nil {
				return t.invalid(svc, field.Invalid(path, p, allocError(err, t.s.ports.Range().String(), "ports")), err)
			}
		}
	}
	return nil
}

// allocateClusterIPs gives svc an address of each of its families: the
// one clusterIPs names at the family's index (taken unless the stored
// service already holds it) or a free one. The first kept families are
// the stored service's (an update): their addresses are not allocated, a
// change of them is validation's to refuse. A PreferDualStack service left
// with a family the cluster no longer serves keeps its address untouched.
func (t *transaction) allocateClusterIPs(ctx context.Context, svc *corev1.Service, before holdings, kept int) error {
	path := field.NewPath("spec", "clusterIPs")
	for i, f := range svc.Spec.IPFamilies {
		if i < kept {
			continue
		}
		if i < len(svc.Spec.ClusterIPs) && svc.Spec.ClusterIPs[i] != "" {
			ip, err := netip.ParseAddr(svc.Spec.ClusterIPs[i])
			if err != nil || before.hasIP(ip) {
				continue
			}
			a := t.s.ipsFor(f)
			if a == nil {
				return t.invalid(svc, field.Invalid(path.Index(i), svc.Spec.ClusterIPs, fmt.Sprintf("%s is not configured on this cluster", f)), ErrNotInRange)
			}
			if err := t.takeIP(ctx, a, ip); err != nil {
				return t.invalid(svc, field.Invalid(path, svc.Spec.ClusterIPs,
					fmt.Sprintf("failed to allocate IP %s: %s", ip, allocError(err, a.CIDR().String(), "IPs"))), err)
			}
			continue
		}
		a := t.s.ipsFor(f)
		if a == nil {
			return t.invalid(svc, field.Invalid(field.NewPath("spec", "ipFamilies").Index(i), f, "not configured on this cluster"), ErrNotInRange)
		}
		ip, err := t.nextIP(ctx, a)
		if err != nil {
			return rangeFull(svc, "serviceIP", err)
		}
		for len(svc.Spec.ClusterIPs) <= i {
			svc.Spec.ClusterIPs = append(svc.Spec.ClusterIPs, "")
		}
		svc.Spec.ClusterIPs[i] = ip.String()
	}
	if len(svc.Spec.ClusterIPs) > 0 {
		svc.Spec.ClusterIP = svc.Spec.ClusterIPs[0]
	}
	return nil
}

// releaseIP gives ip back to its family's allocator (an address of a
// family the cluster no longer serves is left alone).
func (s *ServiceStorage) releaseIP(ctx context.Context, ip netip.Addr) error {
	if a := s.ipsOf(ip); a != nil {
		return a.Release(ctx, ip)
	}
	return nil
}

// invalid makes an allocation failure the 422 kube-apiserver answers, or
// passes a storage failure on.
func (t *transaction) invalid(svc *corev1.Service, fe *field.Error, err error) error {
	if errors.Is(err, ErrAllocated) || errors.Is(err, ErrNotInRange) {
		return invalidService(svc, field.ErrorList{fe})
	}
	return fmt.Errorf("allocating for service %s/%s: %w", svc.Namespace, svc.Name, err)
}

// invalidService is the 422 kube-apiserver answers for svc with the
// field errors errs.
func invalidService(svc *corev1.Service, errs field.ErrorList) error {
	return apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("Service").GroupKind(), svc.Name, errs)
}

// rangeFull is what kube-apiserver answers when it has no free value left
// to pick (what: "serviceIP" or "nodePort"): a 500 (an internal error), as
// the range being full says nothing wrong about the request; a storage
// failure is passed on.
func rangeFull(svc *corev1.Service, what string, err error) error {
	if errors.Is(err, ErrFull) {
		return apierrors.NewInternalError(fmt.Errorf("failed to allocate a %s: %w", what, ErrFull))
	}
	return fmt.Errorf("allocating for service %s/%s: %w", svc.Namespace, svc.Name, err)
}

// allocError is kube-apiserver's text for an allocation failure.
func allocError(err error, rng, what string) string {
	switch {
	case errors.Is(err, ErrAllocated):
		if what == "ports" {
			return "provided port is already allocated"
		}
		return "provided IP is already allocated"
	case errors.Is(err, ErrNotInRange):
		if what == "ports" {
			return "provided port is not in the valid range. The range of valid ports is " + rng
		}
		return "the provided IP is not in the valid range. The range of valid IPs is " + rng
	}
	return err.Error()
}

// release gives back what old held and svc (nil: deleted) no longer does.
func (s *ServiceStorage) release(ctx context.Context, old holdings, svc *corev1.Service) {
	ctx = context.WithoutCancel(ctx)
	var now holdings
	if svc != nil {
		now = held(svc)
	}
	for _, ip := range old.ips {
		if !now.hasIP(ip) {
			if err := s.releaseIP(ctx, ip); err != nil {
				s.log.Error("releasing a ClusterIP", "ip", ip, "err", err)
			}
		}
	}
	for _, p := range old.ports {
		if !now.hasPort(p) {
			if err := s.ports.Release(ctx, p); err != nil {
				s.log.Error("releasing a NodePort", "port", p, "err", err)
			}
		}
	}
}

// Create allocates, then writes; a failed write gives the values back. In
// a request's allocation (BeginWrite) the values were taken before
// validation: Create writes them, and a failed write leaves them to the
// request's finish (a create with a generated name retries with them).
func (s *ServiceStorage) Create(ctx context.Context, key string, obj, out runtime.Object) error {
	svc, ok := obj.(*corev1.Service)
	if !ok {
		return s.inner.Create(ctx, key, obj, out)
	}
	if p := s.pendingIn(ctx); p != nil && !p.t.dryRun {
		if err := s.inner.Create(ctx, key, obj, out); err != nil {
			return err
		}
		p.written = true
		return nil
	}
	svc = svc.DeepCopy()
	t := &transaction{s: s}
	if err := t.allocate(ctx, svc, nil); err != nil {
		t.rollback(ctx)
		return err
	}
	if err := s.inner.Create(ctx, key, svc, out); err != nil {
		t.rollback(ctx)
		return err
	}
	return nil
}

// DryRunCreate returns what Create would write for obj (a copy): the
// ClusterIP and NodePorts a create would take, requested ones checked as a
// create checks them (422 when out of range or taken), free ones picked as
// a create picks them, without taking any: no allocation record is
// written, and a later create may get the same values. key is unused; it
// keeps the signature of Create.
func (s *ServiceStorage) DryRunCreate(ctx context.Context, _ string, obj runtime.Object) (runtime.Object, error) {
	svc, ok := obj.(*corev1.Service)
	if !ok {
		return obj, nil
	}
	svc = svc.DeepCopy()
	if p := s.pendingIn(ctx); p != nil && p.t.dryRun {
		return svc, nil // InitCreate picked the values
	}
	t := &transaction{s: s, dryRun: true}
	if err := t.allocate(ctx, svc, nil); err != nil {
		return nil, err
	}
	return svc, nil
}

// DryRunUpdate returns what an update of old to obj would write (a copy):
// what the new spec adds is checked and picked as DryRunCreate does, what
// it drops shows as dropped; no allocation record changes.
func (s *ServiceStorage) DryRunUpdate(ctx context.Context, _ string, old, obj runtime.Object) (runtime.Object, error) {
	oldSvc, ok1 := old.(*corev1.Service)
	svc, ok2 := obj.(*corev1.Service)
	if !ok1 || !ok2 {
		return obj, nil
	}
	svc = svc.DeepCopy()
	if p := s.pendingIn(ctx); p != nil && p.t.dryRun {
		return svc, nil // InitUpdate picked the values
	}
	t := &transaction{s: s, dryRun: true}
	if err := t.allocate(ctx, svc, oldSvc); err != nil {
		return nil, err
	}
	return svc, nil
}

// GuaranteedUpdate allocates in every attempt what the new spec adds
// (giving back an earlier attempt's takings first) and, once written,
// releases what the stored spec no longer holds. In a request's
// allocation (BeginWrite) tryUpdate took the new values (InitUpdate) and a
// failed write leaves them to the request's finish.
func (s *ServiceStorage) GuaranteedUpdate(ctx context.Context, key string, dest runtime.Object, ignoreNotFound bool,
	preconditions *storage.Preconditions, tryUpdate storage.UpdateFunc) error {
	p := s.pendingIn(ctx)
	if p != nil && p.t.dryRun {
		p = nil
	}
	t := &transaction{s: s}
	var before holdings
	wrapped := func(in runtime.Object) (runtime.Object, error) {
		t.rollback(ctx)
		out, err := tryUpdate(in)
		if err != nil {
			return nil, err
		}
		oldSvc, ok1 := in.(*corev1.Service)
		newSvc, ok2 := out.(*corev1.Service)
		if !ok1 || !ok2 {
			return out, nil
		}
		before = held(oldSvc)
		if p != nil {
			return newSvc, nil
		}
		if err := t.allocate(ctx, newSvc, oldSvc); err != nil {
			return nil, err
		}
		return newSvc, nil
	}
	if err := s.inner.GuaranteedUpdate(ctx, key, dest, ignoreNotFound, preconditions, wrapped); err != nil {
		t.rollback(ctx)
		return err
	}
	if p != nil {
		p.written = true
	}
	if svc, ok := dest.(*corev1.Service); ok {
		s.release(ctx, before, svc)
	}
	return nil
}

// Delete removes the service, then releases what it held.
func (s *ServiceStorage) Delete(ctx context.Context, key string, out runtime.Object, preconditions *storage.Preconditions,
	validateDeletion storage.ValidateObjectFunc) error {
	if err := s.inner.Delete(ctx, key, out, preconditions, validateDeletion); err != nil {
		return err
	}
	if svc, ok := out.(*corev1.Service); ok {
		s.release(ctx, held(svc), nil)
	}
	return nil
}

// Get reads from the inner store.
func (s *ServiceStorage) Get(ctx context.Context, key string, opts storage.GetOptions, out runtime.Object) error {
	return s.inner.Get(ctx, key, opts, out)
}

// GetList lists from the inner store.
func (s *ServiceStorage) GetList(ctx context.Context, key string, opts storage.ListOptions, listObj runtime.Object) error {
	return s.inner.GetList(ctx, key, opts, listObj)
}

// Watch watches the inner store.
func (s *ServiceStorage) Watch(ctx context.Context, key string, opts storage.ListOptions) (watch.Interface, error) {
	return s.inner.Watch(ctx, key, opts)
}

// Sync makes the allocation records describe the configured ranges,
// rebuilding them from the stored services when they are missing or were
// written for other ranges (a changed flag, or data from before the
// allocator existed). prefix is the services' key prefix ("/services").
func (s *ServiceStorage) Sync(ctx context.Context, prefix string) error {
	var list corev1.ServiceList
	if err := s.inner.GetList(ctx, prefix, storage.ListOptions{Recursive: true, Predicate: storage.Everything()}, &list); err != nil {
		return fmt.Errorf("listing services to sync allocations: %w", err)
	}
	var ips []netip.Addr
	var ports []int
	for i := range list.Items {
		h := held(&list.Items[i])
		ips = append(ips, h.ips...)
		ports = append(ports, h.ports...)
	}
	for _, a := range s.ips {
		// Each allocator ignores the other family's addresses.
		if err := a.Sync(ctx, ips); err != nil {
			return err
		}
	}
	return s.ports.Sync(ctx, ports)
}
