package kubelet

import (
	"context"
	"fmt"
	"math/rand/v2"
	goruntime "runtime"
	"slices"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/kubeproof/kubeproof/impl/kubelet/status"
	"github.com/kubeproof/kubeproof/impl/scheduler/framework"
)

// NodeLeaseNamespace holds the nodes' heartbeat Leases.
const NodeLeaseNamespace = "kube-node-lease"

// Pressure is the node's resource pressure: the conditions the eviction
// manager reports True. A simulated node has none unless told
// (Config.Pressure, Kubelet.SetPressure, Kubelet.SetAvailable).
type Pressure struct {
	Memory, Disk, PID bool
}

// Conditions are the pressure condition types that hold, in upstream's
// order.
func (p Pressure) Conditions() []v1.NodeConditionType {
	var out []v1.NodeConditionType
	if p.Memory {
		out = append(out, v1.NodeMemoryPressure)
	}
	if p.Disk {
		out = append(out, v1.NodeDiskPressure)
	}
	if p.PID {
		out = append(out, v1.NodePIDPressure)
	}
	return out
}

// nodeConditions are the four conditions the kubelet owns, with upstream's
// reasons and messages. ready reports whether the runtime answered.
func nodeConditions(ready bool, runtimeErr string, p Pressure) []v1.NodeCondition {
	r := v1.NodeCondition{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status"}
	if !ready {
		r = v1.NodeCondition{Type: v1.NodeReady, Status: v1.ConditionFalse, Reason: "KubeletNotReady", Message: "container runtime is down: " + runtimeErr}
	}
	mem := v1.NodeCondition{Type: v1.NodeMemoryPressure, Status: v1.ConditionFalse, Reason: "KubeletHasSufficientMemory", Message: "kubelet has sufficient memory available"}
	if p.Memory {
		mem = v1.NodeCondition{Type: v1.NodeMemoryPressure, Status: v1.ConditionTrue, Reason: "KubeletHasInsufficientMemory", Message: "kubelet has insufficient memory available"}
	}
	disk := v1.NodeCondition{Type: v1.NodeDiskPressure, Status: v1.ConditionFalse, Reason: "KubeletHasNoDiskPressure", Message: "kubelet has no disk pressure"}
	if p.Disk {
		disk = v1.NodeCondition{Type: v1.NodeDiskPressure, Status: v1.ConditionTrue, Reason: "KubeletHasDiskPressure", Message: "kubelet has disk pressure"}
	}
	pid := v1.NodeCondition{Type: v1.NodePIDPressure, Status: v1.ConditionFalse, Reason: "KubeletHasSufficientPID", Message: "kubelet has sufficient PID available"}
	if p.PID {
		pid = v1.NodeCondition{Type: v1.NodePIDPressure, Status: v1.ConditionTrue, Reason: "KubeletHasInsufficientPID", Message: "kubelet has insufficient PID available"}
	}
	return []v1.NodeCondition{mem, disk, pid, r}
}

// NodeStatus computes the node's status from the config, the node's
// pressure, the runtime's health and the previous status (whose condition
// transition times are kept while a condition's status holds). Pure.
//
// The conditions other writers own (a route controller's or network
// plugin's NetworkUnavailable) and the volumes the attach/detach controller
// reports attached are kept from the previous status, as upstream's status
// setters, which change the Node as read in place: each of the kubelet's
// four conditions takes the place of its namesake (ownedConditionIndex),
// and those the previous status lacks are appended in the kubelet's order.
// A pressure condition whose status holds keeps its reason, message and
// transition time as read, only its heartbeat renewed; Ready is rewritten
// whole, keeping its transition time while its status holds. No setter
// touches the deprecated phase: it is kept as read. Likewise the
// resources another writer advertised in the previous capacity (an
// extended resource patched into nodes/NAME/status) stay in the capacity
// and the allocatable (nodeResources).
func NodeStatus(cfg *Config, old *v1.NodeStatus, p Pressure, runtimeVersion string, runtimeErr error, now time.Time) v1.NodeStatus {
	errText := ""
	if runtimeErr != nil {
		errText = runtimeErr.Error()
	}
	own := nodeConditions(runtimeErr == nil, errText, p)
	var oldConds []v1.NodeCondition
	var phase v1.NodePhase
	var attached []v1.AttachedVolume
	if old != nil {
		oldConds = old.Conditions
		phase = old.Phase
		attached = slices.Clone(old.VolumesAttached)
	}
	t := metav1.NewTime(now)
	at := make([]int, len(own))
	for i := range own {
		own[i].LastHeartbeatTime = t
		own[i].LastTransitionTime = t
		at[i] = ownedConditionIndex(oldConds, own[i].Type)
		if at[i] < 0 || oldConds[at[i]].Status != own[i].Status {
			continue
		}
		if own[i].Type == v1.NodeReady {
			own[i].LastTransitionTime = oldConds[at[i]].LastTransitionTime
			continue
		}
		// A pressure condition that holds is left as read but for its
		// heartbeat, whoever wrote its reason and message.
		own[i] = oldConds[at[i]]
		own[i].LastHeartbeatTime = t
	}
	conds := mergeNodeConditions(oldConds, own, at)
	capacity, allocatable := cfg.nodeResources(old)
	var swap *v1.NodeSwapStatus
	if c := cfg.SwapCapacity.Value(); c > 0 {
		// As upstream's MachineInfo setter: the machine's swap capacity,
		// none when it has no swap.
		swap = &v1.NodeSwapStatus{Capacity: ptr.To(c)}
	}
	return v1.NodeStatus{
		Capacity:        capacity,
		Allocatable:     allocatable,
		Phase:           phase,
		Conditions:      conds,
		VolumesAttached: attached,
		Addresses: []v1.NodeAddress{
			{Type: v1.NodeInternalIP, Address: cfg.NodeIP},
			{Type: v1.NodeHostName, Address: cfg.NodeName},
		},
		DaemonEndpoints: v1.NodeDaemonEndpoints{KubeletEndpoint: v1.DaemonEndpoint{Port: cfg.Port}},
		NodeInfo: v1.NodeSystemInfo{
			MachineID: cfg.NodeName, SystemUUID: cfg.NodeName, BootID: cfg.NodeName,
			KernelVersion: "kubeproof", OSImage: "kubeproof simulated node",
			ContainerRuntimeVersion: runtimeVersion, KubeletVersion: cfg.KubeletVersion,
			OperatingSystem: goruntime.GOOS, Architecture: goruntime.GOARCH, Swap: swap,
		},
	}
}

// nodeResources is the capacity and allocatable the kubelet posts over
// the previous status old (nil at registration), as upstream's MachineInfo
// setter, which writes the resources it computes into the capacity as read
// and never removes one: a resource only another writer advertised in
// old's capacity is kept, and made allocatable in full (less a
// reservation of it, if any). In the allocatable as read, an extended
// resource no longer in the capacity is dropped; any other stays.
func (c *Config) nodeResources(old *v1.NodeStatus) (capacity, allocatable v1.ResourceList) {
	capacity = c.capacity()
	if old == nil {
		return capacity, c.allocatable()
	}
	for name, q := range old.Capacity {
		if _, ours := capacity[name]; !ours {
			capacity[name] = q.DeepCopy()
		}
	}
	allocatable = v1.ResourceList{}
	for name, q := range old.Allocatable {
		if _, inCapacity := capacity[name]; inCapacity || !framework.IsExtendedResourceName(name) {
			allocatable[name] = q.DeepCopy()
		}
	}
	// The reservations are computed from the kubelet's own capacity, as
	// the allocatable it admits pods against (Config.allocatable).
	for name, q := range nodeAllocatable(capacity, c.allocatableReservation(c.capacity())) {
		allocatable[name] = q
	}
	return capacity, allocatable
}

// ownedConditionIndex is the index in conds of the condition of type t the
// kubelet updates, -1 if none: the first Ready condition, as upstream's
// ReadyCondition setter, and the last of a pressure type, as its
// MemoryPressureCondition, DiskPressureCondition and PIDPressureCondition.
func ownedConditionIndex(conds []v1.NodeCondition, t v1.NodeConditionType) int {
	is := func(c v1.NodeCondition) bool { return c.Type == t }
	if t == v1.NodeReady {
		return slices.IndexFunc(conds, is)
	}
	for i := len(conds) - 1; i >= 0; i-- {
		if is(conds[i]) {
			return i
		}
	}
	return -1
}

// mergeNodeConditions is old with each condition own[i] in place of
// old[at[i]], and those whose at[i] is negative appended in own's order.
func mergeNodeConditions(old, own []v1.NodeCondition, at []int) []v1.NodeCondition {
	out := make([]v1.NodeCondition, len(old), len(old)+len(own))
	copy(out, old)
	for i, c := range own {
		if at[i] >= 0 {
			out[at[i]] = c
		}
	}
	for i, c := range own {
		if at[i] < 0 {
			out = append(out, c)
		}
	}
	return out
}

// nodeStatusChanged reports whether the status differs from old in
// anything but heartbeat times.
func nodeStatusChanged(old, cur *v1.NodeStatus) bool {
	// Only read: a shallow copy with its own conditions will do.
	strip := func(s *v1.NodeStatus) *v1.NodeStatus {
		c := *s
		c.Conditions = slices.Clone(s.Conditions)
		for i := range c.Conditions {
			c.Conditions[i].LastHeartbeatTime = metav1.Time{}
		}
		return &c
	}
	a, b := strip(old), strip(cur)
	// Checked every 10 s by every node; equal encodings settle the common
	// case without reflection.
	return !status.SameEncoding(a, b) && !apiequality.Semantic.DeepEqual(a, b)
}

// registerNode creates the Node (or adopts an existing one).
func (k *Kubelet) registerNode(ctx context.Context) error {
	labels := map[string]string{
		v1.LabelHostname: k.cfg.NodeName, v1.LabelOSStable: goruntime.GOOS, v1.LabelArchStable: goruntime.GOARCH,
	}
	for key, v := range k.cfg.Labels {
		labels[key] = v
	}
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: k.cfg.NodeName, Labels: labels}}
	if k.cfg.PodCIDR != "" {
		// One CIDR, or a dual-stack node's two, comma-separated.
		for _, c := range strings.Split(k.cfg.PodCIDR, ",") {
			node.Spec.PodCIDRs = append(node.Spec.PodCIDRs, strings.TrimSpace(c))
		}
		node.Spec.PodCIDR = node.Spec.PodCIDRs[0]
	}
	k.evictionTick(ctx) // the pressure conditions to register with
	version, verr := k.rt.Version(ctx)
	node.Status = NodeStatus(&k.cfg, nil, k.Pressure(), version, verr, k.clock.Now())
	// The conditions' events, as upstream's node status setters record
	// them building the initial Node at every registration attempt,
	// before the create: so also when it fails, and when the node exists
	// (a restarted kubelet) (nodeevents.go).
	k.recordNodeStatusEvents(nodeStatusEvents(nil, node.Status.Conditions))
	created, err := k.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		created, err = k.client.CoreV1().Nodes().Get(ctx, k.cfg.NodeName, metav1.GetOptions{})
		if err == nil {
			k.setNode(created)
			return k.updateNodeStatus(ctx, true)
		}
	}
	if err != nil {
		return fmt.Errorf("registering node %s: %w", k.cfg.NodeName, err)
	}
	// Create may drop status (a real API server does); post it.
	k.setNode(created)
	return k.updateNodeStatus(ctx, true)
}

func (k *Kubelet) setNode(n *v1.Node) {
	k.mu.Lock()
	k.node = n
	k.mu.Unlock()
}

// nodeReportDue reports whether a node status that has not changed is
// posted anyway: the first time (last is zero), and then every report
// frequency after the last post, moved once by delay (NextReportDelay).
func nodeReportDue(now, last time.Time, every, delay time.Duration) bool {
	return last.IsZero() || !now.Before(last.Add(every+delay))
}

// NextReportDelay is the one-time offset of the next unchanged node status
// post, decided when a post is made, with r uniform in [0, 1) (exported
// for the benchmarks' stand-in nodes, which post on the same schedule). After a post of a
// changed status — or the first since the kubelet started (registerNode
// forces it) — it is uniform in [-every/2, +every/2); after a post that was
// only due, 0, so that from then on the node posts every report frequency.
// Without it, kubelets started together (a data centre after a power cut,
// kubeproof up's simulated nodes) or whose nodes all changed together
// post their unchanged status together every five minutes, each burst a
// thousand node writes and their watch events at once. As upstream's
// kubelet since Kubernetes 1.33.
func NextReportDelay(changed bool, every time.Duration, r float64) time.Duration {
	if !changed || every <= 0 {
		return 0
	}
	return time.Duration((r - 0.5) * float64(every))
}

// reportRand draws NextReportDelay's r.
func (k *Kubelet) reportRand() float64 {
	if k.testReportRand != nil {
		return k.testReportRand()
	}
	return rand.Float64()
}

// nodeStatusUpdateRetry is how many times updateNodeStatus tries to post
// the node's status before giving up until its next period (upstream's
// kubelet's nodeStatusUpdateRetry).
const nodeStatusUpdateRetry = 5

// updateNodeStatus posts node status if it changed, if force, or if the
// report frequency (moved by nodeReportDelay) elapsed. As upstream's
// kubelet, it tries up to nodeStatusUpdateRetry times, at once, whatever
// the error (a conflict, a 500, a timeout, a failed read), logging each
// failure, and then returns "update node status exceeds retry count".
func (k *Kubelet) updateNodeStatus(ctx context.Context, force bool) error {
	var err error
	for try := 0; try < nodeStatusUpdateRetry; try++ {
		if err = k.tryUpdateNodeStatus(ctx, try, force); err == nil {
			return nil
		}
		if ctx.Err() != nil {
			// Shutting down: no point in the remaining tries.
			return err
		}
		k.log.Error("Error updating node status, will retry", "err", err)
	}
	return fmt.Errorf("update node status exceeds retry count: %w", err)
}

// tryUpdateNodeStatus is one try of updateNodeStatus: it reads the Node,
// computes its status, and patches nodes/NAME/status (nodeStatusPatch) if
// the status changed, if force, or if a post is due; it records the node
// status events of every try, against the node that try read.
//
// It compares against the Node as the API server has it, not only its own
// last write: the node lifecycle controller may have set Ready=Unknown
// meanwhile (a node that was cut off), and that must be corrected now, not
// after the report frequency. The first try reads the API server's watch
// cache (resourceVersion "0"); the retries read from storage, in case the
// failure came from a stale read. (Upstream's kubelet reads its first try
// from its own node informer since Kubernetes 1.31 and from the API
// server's cache before; ours keeps no node informer.)
func (k *Kubelet) tryUpdateNodeStatus(ctx context.Context, try int, force bool) error {
	opts := metav1.GetOptions{}
	if try == 0 {
		opts.ResourceVersion = "0"
	}
	node, err := k.client.CoreV1().Nodes().Get(ctx, k.cfg.NodeName, opts)
	if err != nil {
		return fmt.Errorf("error getting node %q: %w", k.cfg.NodeName, err)
	}
	now := k.clock.Now()
	version, verr := k.rt.Version(ctx)
	k.mu.Lock()
	due := nodeReportDue(now, k.lastNodeReport, k.cfg.NodeStatusReportFrequency, k.nodeReportDelay)
	k.mu.Unlock()
	st := NodeStatus(&k.cfg, &node.Status, k.Pressure(), version, verr, now)
	// On every try, against the node it was computed from, as upstream's
	// status setters: a retry records them again, or records those of a
	// change another writer made meanwhile (the node lifecycle
	// controller's Unknown).
	k.recordNodeStatusEvents(nodeStatusEvents(node.Status.Conditions, st.Conditions))
	k.recordSchedulableEvent(node.Spec.Unschedulable)
	changed := force || nodeStatusChanged(&node.Status, &st)
	if !changed && !due {
		k.setNode(node)
		return nil
	}
	next := node.DeepCopy()
	next.Status = st
	patch, err := nodeStatusPatch(node, next)
	if err != nil {
		return err
	}
	updated, err := k.client.CoreV1().Nodes().Patch(ctx, k.cfg.NodeName, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil {
		return fmt.Errorf("failed to patch status %q for node %q: %w", patch, k.cfg.NodeName, err)
	}
	k.addresses.Store(&updated.Status.Addresses)
	k.mu.Lock()
	k.node = updated
	k.lastNodeReport = now
	k.nodeReportDelay = NextReportDelay(changed, k.cfg.NodeStatusReportFrequency, k.reportRand())
	k.mu.Unlock()
	return nil
}

// renewLease creates or renews the node's Lease in kube-node-lease.
func (k *Kubelet) renewLease(ctx context.Context) error {
	now := metav1.NewMicroTime(k.clock.Now())
	leases := k.client.CoordinationV1().Leases(NodeLeaseNamespace)
	k.mu.Lock()
	lease, node := k.lease, k.node
	k.mu.Unlock()
	if lease != nil {
		l := lease.DeepCopy()
		l.Spec.RenewTime = &now
		updated, err := leases.Update(ctx, l, metav1.UpdateOptions{})
		if err == nil {
			k.mu.Lock()
			k.lease = updated
			k.mu.Unlock()
			return nil
		}
		if !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			return fmt.Errorf("renewing lease of node %s: %w", k.cfg.NodeName, err)
		}
		lease = nil
	}
	got, err := leases.Get(ctx, k.cfg.NodeName, metav1.GetOptions{})
	switch {
	case err == nil:
		l := got.DeepCopy()
		l.Spec.HolderIdentity = ptr.To(k.cfg.NodeName)
		l.Spec.LeaseDurationSeconds = ptr.To(int32(k.cfg.LeaseDuration / time.Second))
		l.Spec.RenewTime = &now
		updated, err := leases.Update(ctx, l, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("renewing lease of node %s: %w", k.cfg.NodeName, err)
		}
		lease = updated
	case apierrors.IsNotFound(err):
		l := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: k.cfg.NodeName, Namespace: NodeLeaseNamespace},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity:       ptr.To(k.cfg.NodeName),
				LeaseDurationSeconds: ptr.To(int32(k.cfg.LeaseDuration / time.Second)),
				RenewTime:            &now,
			},
		}
		if node != nil && node.UID != "" {
			l.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}}
		}
		created, err := leases.Create(ctx, l, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating lease of node %s: %w", k.cfg.NodeName, err)
		}
		lease = created
	default:
		return fmt.Errorf("reading lease of node %s: %w", k.cfg.NodeName, err)
	}
	k.mu.Lock()
	k.lease = lease
	k.mu.Unlock()
	return nil
}

// Pressure is the node's current resource pressure, as the eviction
// manager last decided it.
func (k *Kubelet) Pressure() Pressure {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.pressure
}

// SetPressure makes a simulated node short of memory, disk or process IDs:
// its eviction provider reports none available for memory.available,
// nodefs.available and pid.available respectively (and its own figures
// for the others). The eviction manager then reports the pressure
// conditions (for signals that have a threshold), refuses pods at
// admission (AdmitUnderPressure) and evicts running pods, at its next
// interval (at once if the kubelet runs). A node with a real runtime
// ignores it.
func (k *Kubelet) SetPressure(p Pressure) {
	if k.simEviction == nil {
		k.log.Warn("SetPressure: not a simulated node; ignored")
		return
	}
	feedSimPressure(k.simEviction, p)
	k.evictNowIfRunning()
}
