package ipallocator

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeproof/kubeproof/impl/storage"
)

// DefaultRepairInterval is how often the allocation records are checked
// against the services, as kube-apiserver's ClusterIP and NodePort repair
// controllers do.
const DefaultRepairInterval = 3 * time.Minute

// leakRuns is how many consecutive repair passes must find a value
// allocated but held by no service before it is released (upstream's
// numRepairsBeforeLeakCleanup): a create allocates before it writes its
// service, so a value only just allocated looks leaked for a moment.
const leakRuns = 3

// Finding is a problem a repair pass found in a service's allocation,
// which upstream reports as a Warning event on the service.
type Finding struct {
	Service    types.NamespacedName
	ServiceUID types.UID
	// Reason is upstream's: ClusterIPNotAllocated, ClusterIPAlreadyAllocated,
	// ClusterIPOutOfRange, PortNotAllocated, PortAlreadyAllocated,
	// PortOutOfRange.
	Reason string
	// Action is ClusterIPAllocation or PortAllocation; Controller is
	// ipallocator-repair-controller or portallocator-repair-controller.
	Action, Controller string
	Message            string
}

// holder is one value a service holds, as a repair pass sees it.
type holder struct {
	svc types.NamespacedName
	uid types.UID
	// value is the value's text ("10.96.0.5", "30001"); offset its place
	// in the range when inRange.
	value   string
	offset  int
	inRange bool
}

// repairKind is what differs between the ClusterIP and NodePort repairs:
// the findings' words.
type repairKind struct {
	action, controller                    string
	notAllocated, duplicate, outOfRange   string
	notAllocatedMsg, duplicateMsg, oorMsg string // fmt formats of the value (and the range)
	rangeName                             string
}

var (
	ipRepair = repairKind{
		action: "ClusterIPAllocation", controller: "ipallocator-repair-controller",
		notAllocated: "ClusterIPNotAllocated", duplicate: "ClusterIPAlreadyAllocated", outOfRange: "ClusterIPOutOfRange",
		notAllocatedMsg: "Cluster IP [%s]:%%s is not allocated; repairing",
		duplicateMsg:    "Cluster IP [%s]:%%s was assigned to multiple services; please recreate service",
		oorMsg:          "Cluster IP [%s]:%%s is not within the configured Service CIDR %%s; please recreate service",
	}
	portRepair = repairKind{
		action: "PortAllocation", controller: "portallocator-repair-controller",
		notAllocated: "PortNotAllocated", duplicate: "PortAlreadyAllocated", outOfRange: "PortOutOfRange",
		notAllocatedMsg: "Port %s is not allocated; repairing",
		duplicateMsg:    "Port %s was assigned to multiple services; please recreate service",
		oorMsg:          "Port %s is not within the port range %s; please recreate service",
	}
)

// ipRepairOf is ipRepair for the range of a (its family in the messages).
func ipRepairOf(a *IPs) repairKind {
	k := ipRepair
	f := a.Family()
	k.notAllocatedMsg = fmt.Sprintf(k.notAllocatedMsg, f)
	k.duplicateMsg = fmt.Sprintf(k.duplicateMsg, f)
	k.oorMsg = fmt.Sprintf(k.oorMsg, f)
	k.rangeName = a.CIDR().String()
	return k
}

// repairPlan is planRepair's decision.
type repairPlan struct {
	// allocated is the rebuilt set of taken offsets.
	allocated map[int]bool
	// leaks are the offsets taken but held by no service, with the passes
	// left before they are released, for the next pass.
	leaks map[int]int
	// released are the leaked offsets this pass frees.
	released []int
	findings []Finding
}

// planRepair rebuilds a range's allocations from the values the services
// hold (in list order), as upstream's repair controllers: a value held
// but not recorded is recorded (NotAllocated), one held by a second
// service or out of the range is reported and not recorded for it, and a
// recorded value no service holds is kept for leakRuns passes (leaks
// carries the count from the previous pass) and then released. Pure.
func planRepair(kind repairKind, stored map[int]bool, holders []holder, leaks map[int]int) repairPlan {
	p := repairPlan{allocated: map[int]bool{}, leaks: map[int]int{}}
	find := func(h holder, reason, format string, args ...any) {
		p.findings = append(p.findings, Finding{Service: h.svc, ServiceUID: h.uid, Reason: reason, Action: kind.action, Controller: kind.controller,
			Message: fmt.Sprintf(format, args...)})
	}
	for _, h := range holders {
		switch {
		case !h.inRange:
			find(h, kind.outOfRange, kind.oorMsg, h.value, kind.rangeName)
		case p.allocated[h.offset]:
			find(h, kind.duplicate, kind.duplicateMsg, h.value)
		default:
			p.allocated[h.offset] = true
			if !stored[h.offset] {
				find(h, kind.notAllocated, kind.notAllocatedMsg, h.value)
			}
		}
	}
	for o := range stored {
		if p.allocated[o] {
			continue
		}
		left, seen := leaks[o]
		if !seen {
			left = leakRuns - 1
		}
		if left > 0 {
			p.allocated[o] = true
			p.leaks[o] = left - 1
			continue
		}
		p.released = append(p.released, o)
	}
	return p
}

// blockSnapshot is a block's record as a repair pass read it.
type blockSnapshot struct {
	rv   string
	bits *big.Int
}

// snapshot reads every block record of the range (a quorum read); a
// record of another range reads as empty.
func (r *Range) snapshot(ctx context.Context) (map[int]blockSnapshot, error) {
	recs, err := r.records(ctx)
	if err != nil {
		return nil, err
	}
	out := map[int]blockSnapshot{}
	for b, rec := range recs {
		bits := new(big.Int)
		if rec.Range == r.name {
			bits.SetBytes(rec.Data)
		}
		out[b] = blockSnapshot{rv: rec.ResourceVersion, bits: bits}
	}
	return out, nil
}

// errStale: a block changed since the repair pass read it.
var errStale = errors.New("allocation record changed since it was read")

// writeIfUnchanged writes bits as block b's record if the record is still
// at resourceVersion rv ("" : still missing); errStale otherwise. With the
// store's own compare-and-swap (STORE-3) this is the snapshot-then-write
// of upstream's repair: no allocation or release made after the pass read
// the block is overwritten.
func (r *Range) writeIfUnchanged(ctx context.Context, b int, rv string, bits *big.Int) error {
	key := r.blockKey(b)
	err := r.store.GuaranteedUpdate(ctx, key, &corev1.RangeAllocation{}, true, nil,
		func(in runtime.Object) (runtime.Object, error) {
			cur, ok := in.(*corev1.RangeAllocation)
			if !ok {
				return nil, fmt.Errorf("allocation record %s is a %T", key, in)
			}
			if cur.ResourceVersion != rv {
				return nil, errStale
			}
			return r.record(cur, b, bits), nil
		})
	if err != nil && !errors.Is(err, errStale) {
		return fmt.Errorf("writing allocation record %s: %w", key, err)
	}
	return err
}

// repairRange is one range's part of a repair pass: its snapshot (read
// before the services are listed) and what it needs to rebuild.
type repairRange struct {
	r     *Range
	kind  repairKind
	snap  map[int]blockSnapshot
	leaks map[int]int
}

// apply plans the range's repair over holders and writes the blocks that
// change, each only if unchanged since its snapshot (errStale if one
// changed: the pass is retried). It returns the plan.
func (rr *repairRange) apply(ctx context.Context, holders []holder) (repairPlan, error) {
	stored := map[int]bool{}
	for b, s := range rr.snap {
		for i := range s.bits.BitLen() {
			if s.bits.Bit(i) == 1 && b*blockBits+i < rr.r.size {
				stored[b*blockBits+i] = true
			}
		}
	}
	plan := planRepair(rr.kind, stored, holders, rr.leaks)
	want := map[int]*big.Int{}
	for o := range plan.allocated {
		b := o / blockBits
		if want[b] == nil {
			want[b] = new(big.Int)
		}
		want[b].SetBit(want[b], o%blockBits, 1)
	}
	for b := range rr.r.blocks() {
		cur, had := rr.snap[b]
		next := want[b]
		if next == nil {
			next = new(big.Int)
		}
		if had && cur.bits.Cmp(next) == 0 || !had && next.Sign() == 0 {
			continue
		}
		if err := rr.r.writeIfUnchanged(ctx, b, cur.rv, next); err != nil {
			return repairPlan{}, err
		}
	}
	return plan, nil
}

// Repairer checks the allocation records against the services, one pass
// per RunOnce (the API server's loop calls it every interval), and
// repairs them, as kube-apiserver's ClusterIP and NodePort
// repair controllers do: values services hold but the records lack are
// recorded, values no service holds for leakRuns passes are released (a
// create or delete an ambiguous etcd failure cut between its allocation
// write and its service write leaves such a value), and services holding
// a value out of the range or held by another service are reported.
// Findings are reported only from passes whose writes succeeded.
type Repairer struct {
	s      *ServiceStorage
	prefix string
	report func(Finding)
	// ipLeaks (one per ClusterIP range, as s.ips) and portLeaks carry
	// the leak counts between passes; only the goroutine calling
	// RunOnce touches them.
	ipLeaks   []map[int]int
	portLeaks map[int]int
}

// NewRepairer returns the repairer of s's ranges over the services under
// prefix ("/services"); report receives each finding (nil: none).
func NewRepairer(s *ServiceStorage, prefix string, report func(Finding)) *Repairer {
	if report == nil {
		report = func(Finding) {}
	}
	ipLeaks := make([]map[int]int, len(s.ips))
	for i := range ipLeaks {
		ipLeaks[i] = map[int]int{}
	}
	return &Repairer{s: s, prefix: prefix, report: report, ipLeaks: ipLeaks, portLeaks: map[int]int{}}
}

// RunOnce makes one repair pass, retried a few times when a record
// changed under it (a create or delete ran meanwhile).
func (rp *Repairer) RunOnce(ctx context.Context) error {
	var err error
	for attempt := range 5 {
		if err = rp.pass(ctx); !errors.Is(err, errStale) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(10<<attempt) * time.Millisecond):
		}
	}
	return fmt.Errorf("allocation records kept changing: %w", err)
}

// pass reads the records, then the services (so a value allocated before
// the records were read and not yet written in a service looks leaked,
// which the leak grace covers), and rebuilds each range: the ClusterIP
// range of each family, then the NodePorts. An address of a family the
// cluster does not serve is passed over, as upstream.
func (rp *Repairer) pass(ctx context.Context) error {
	s := rp.s
	portKind := portRepair
	portKind.rangeName = s.ports.Range().String()
	var ranges []*repairRange
	for i, a := range s.ips {
		ranges = append(ranges, &repairRange{r: a.r, kind: ipRepairOf(a), leaks: rp.ipLeaks[i]})
	}
	ranges = append(ranges, &repairRange{r: s.ports.r, kind: portKind, leaks: rp.portLeaks})
	for _, rr := range ranges {
		snap, err := rr.r.snapshot(ctx)
		if err != nil {
			return err
		}
		rr.snap = snap
	}
	var list corev1.ServiceList
	if err := s.inner.GetList(ctx, rp.prefix, storage.ListOptions{Recursive: true, Predicate: storage.Everything()}, &list); err != nil {
		return fmt.Errorf("listing services to repair allocations: %w", err)
	}
	// holders[i] are range i's (as ranges).
	holders := make([][]holder, len(ranges))
	ports := len(ranges) - 1
	for i := range list.Items {
		svc := &list.Items[i]
		name := types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}
		h := held(svc)
		for _, ip := range h.ips {
			r := slices.Index(s.ips, s.ipsOf(ip))
			if r < 0 { // a family the cluster does not serve
				continue
			}
			o, ok := s.ips[r].offset(ip)
			holders[r] = append(holders[r], holder{svc: name, uid: svc.UID, value: ip.String(), offset: o, inRange: ok})
		}
		for _, p := range h.ports {
			ok := s.ports.pr.Contains(p)
			holders[ports] = append(holders[ports], holder{svc: name, uid: svc.UID, value: strconv.Itoa(p), offset: p - s.ports.pr.Base, inRange: ok})
		}
	}
	plans := make([]repairPlan, len(ranges))
	for i, rr := range ranges {
		plan, err := rr.apply(ctx, holders[i])
		if err != nil {
			return err
		}
		plans[i] = plan
	}
	for i, a := range s.ips {
		rp.ipLeaks[i] = plans[i].leaks
		for _, o := range plans[i].released {
			s.log.Warn("released a leaked ClusterIP", "ip", a.ip(o))
		}
	}
	rp.portLeaks = plans[ports].leaks
	for _, o := range plans[ports].released {
		s.log.Warn("released a leaked NodePort", "port", s.ports.pr.Base+o)
	}
	for _, plan := range plans {
		for _, f := range plan.findings {
			rp.report(f)
		}
	}
	return nil
}
