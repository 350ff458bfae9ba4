package status

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/kubeproof/kubeproof/impl/kubelet/podsync"
)

// ErrPodReplaced is returned when the pod in the API has another UID than
// the one whose status is being written (deleted and recreated).
var ErrPodReplaced = errors.New("pod was replaced by another with the same name")

// ErrTerminal is returned when asked to move a terminal pod back to a
// non-terminal phase (KUBELET-5).
var ErrTerminal = errors.New("refusing to move a pod out of a terminal phase")

// Manager writes pod statuses through pods/status.
type Manager struct {
	client kubernetes.Interface
	writes atomic.Int64
}

// NewManager returns a status manager writing with client.
func NewManager(client kubernetes.Interface) *Manager { return &Manager{client: client} }

// Writes is the number of status writes sent (for tests and metrics).
func (m *Manager) Writes() int64 { return m.writes.Load() }

// Normalize truncates every timestamp to whole seconds, the precision the
// API stores, so that a status read back compares equal to the one written.
// (The instant metav1.Time.Rfc3339Copy keeps, without formatting and
// parsing it: every sync of a running pod normalizes its containers' start
// times.) A start time already whole is left as it is; another is
// replaced, not changed in place (it may be shared with the old status).
func Normalize(s *v1.PodStatus) {
	trunc := func(t *metav1.Time) {
		if t != nil && !t.IsZero() && t.Nanosecond() != 0 {
			*t = metav1.NewTime(t.Truncate(time.Second))
		}
	}
	if s.StartTime != nil && !s.StartTime.IsZero() && s.StartTime.Nanosecond() != 0 {
		t := *s.StartTime
		trunc(&t)
		s.StartTime = &t
	}
	for i := range s.Conditions {
		trunc(&s.Conditions[i].LastProbeTime)
		trunc(&s.Conditions[i].LastTransitionTime)
	}
	for _, list := range [][]v1.ContainerStatus{s.InitContainerStatuses, s.ContainerStatuses, s.EphemeralContainerStatuses} {
		for i := range list {
			for _, st := range []*v1.ContainerState{&list[i].State, &list[i].LastTerminationState} {
				if st.Running != nil {
					trunc(&st.Running.StartedAt)
				}
				if st.Terminated != nil {
					trunc(&st.Terminated.StartedAt)
					trunc(&st.Terminated.FinishedAt)
				}
			}
		}
	}
}

// Equal reports whether two statuses are the same once normalized, as
// apiequality.Semantic.DeepEqual judges (upstream's status manager's
// test). A status already normalized (as every status read from the API
// is) is compared in place; only one with sub-second times is copied
// first. Equal protobuf encodings decide "equal" without reflection
// (SameEncoding): the periodic resync of a Running pod asks this of every
// pod every SyncFrequency, and reflection made it most of that sync's CPU
// and garbage.
//
// Neither a nor b escapes (the caller's status may live on its stack):
// Semantic.DeepEqual, which takes interfaces, is given copies.
func Equal(a, b *v1.PodStatus) bool {
	if !normalized(a) {
		a = a.DeepCopy()
		Normalize(a)
	}
	if !normalized(b) {
		b = b.DeepCopy()
		Normalize(b)
	}
	if sameStatusEncoding(a, b) {
		return true
	}
	ac, bc := *a, *b
	return apiequality.Semantic.DeepEqual(&ac, &bc)
}

// sameStatusEncoding is SameEncoding for pod statuses, called on the type
// itself so that neither status escapes.
func sameStatusEncoding(a, b *v1.PodStatus) bool {
	n := a.Size()
	if n != b.Size() {
		return false
	}
	bufs := sizedBuffers(n)
	defer encodeBuffers.Put(bufs)
	if _, err := a.MarshalToSizedBuffer(bufs[0]); err != nil {
		return false
	}
	if _, err := b.MarshalToSizedBuffer(bufs[1]); err != nil {
		return false
	}
	return bytes.Equal(bufs[0], bufs[1])
}

// Encodable is an API type's generated protobuf marshalling.
type Encodable interface {
	Size() int
	MarshalToSizedBuffer([]byte) (int, error)
}

// SameEncoding reports whether a and b (of the same type) marshal to the
// same protobuf bytes. For API types this implies
// apiequality.Semantic.DeepEqual: every field is encoded (map keys in
// sorted order), times as seconds and nanoseconds (the same instant),
// quantities as their string (the same value). Different bytes decide
// nothing: equal quantities may be written differently, and an empty list
// encodes as a missing one.
func SameEncoding(a, b Encodable) bool {
	n := a.Size()
	if n != b.Size() {
		return false
	}
	bufs := sizedBuffers(n)
	defer encodeBuffers.Put(bufs)
	for i, s := range [2]Encodable{a, b} {
		if _, err := s.MarshalToSizedBuffer(bufs[i]); err != nil {
			return false
		}
	}
	return bytes.Equal(bufs[0], bufs[1])
}

// encodeBuffers are SameEncoding's two marshal buffers, reused.
var encodeBuffers = sync.Pool{New: func() any { return new([2][]byte) }}

// sizedBuffers takes two marshal buffers of n bytes each from
// encodeBuffers; the caller puts them back.
func sizedBuffers(n int) *[2][]byte {
	bufs := encodeBuffers.Get().(*[2][]byte)
	for i := range bufs {
		if cap(bufs[i]) < n {
			bufs[i] = make([]byte, n)
		}
		bufs[i] = bufs[i][:n]
	}
	return bufs
}

// normalized reports whether Normalize would leave s's times as they are
// (as instants: Semantic.DeepEqual compares times by instant, not by
// location or monotonic reading).
func normalized(s *v1.PodStatus) bool {
	whole := func(t *metav1.Time) bool { return t == nil || t.IsZero() || t.Nanosecond() == 0 }
	if !whole(s.StartTime) {
		return false
	}
	for i := range s.Conditions {
		if !whole(&s.Conditions[i].LastProbeTime) || !whole(&s.Conditions[i].LastTransitionTime) {
			return false
		}
	}
	for _, list := range [][]v1.ContainerStatus{s.InitContainerStatuses, s.ContainerStatuses, s.EphemeralContainerStatuses} {
		for i := range list {
			for _, st := range []*v1.ContainerState{&list[i].State, &list[i].LastTerminationState} {
				if st.Running != nil && !whole(&st.Running.StartedAt) {
					return false
				}
				if st.Terminated != nil && (!whole(&st.Terminated.StartedAt) || !whole(&st.Terminated.FinishedAt)) {
					return false
				}
			}
		}
	}
	return true
}

// Write sets pod's status to st through pods/status if it differs from the
// pod's current status, retrying on conflict with a freshly read pod. Each
// attempt writes st merged with the status it writes onto (Merge): the
// conditions other components set there, and a terminal phase with its
// DisruptionTarget, survive a status generated from an older view. It
// returns the pod as stored afterwards.
func (m *Manager) Write(ctx context.Context, pod *v1.Pod, st v1.PodStatus) (*v1.Pod, error) {
	Normalize(&st)
	cur := pod
	var out *v1.Pod
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		if cur.UID != pod.UID {
			return ErrPodReplaced
		}
		if podsync.IsTerminalPhase(cur.Status.Phase) && !podsync.IsTerminalPhase(st.Phase) {
			return fmt.Errorf("pod %s/%s is %s: %w", pod.Namespace, pod.Name, cur.Status.Phase, ErrTerminal)
		}
		want := Merge(&cur.Status, st)
		if Equal(&cur.Status, &want) {
			out = cur
			return nil
		}
		m.writes.Add(1)
		updated, err := m.client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, withStatus(cur, want), metav1.UpdateOptions{})
		if err == nil {
			out = updated
			return nil
		}
		if apierrors.IsConflict(err) {
			fresh, gerr := m.client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
			if gerr != nil {
				return fmt.Errorf("re-reading pod %s/%s after conflict: %w", pod.Namespace, pod.Name, gerr)
			}
			cur = fresh
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("writing status of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return out, nil
}

// withStatus is the pod to send in a status write: cur with status st. A
// shallow copy, not a deep one: the write only encodes it (setting the
// copy's own TypeMeta while it does) and cur, often the informer's
// read-only object, shares its spec and metadata with it unchanged. The
// deep copy was ~4 KB of garbage per write, its old status thrown away
// at once.
func withStatus(cur *v1.Pod, st v1.PodStatus) *v1.Pod {
	p := new(v1.Pod)
	p.TypeMeta, p.ObjectMeta, p.Spec, p.Status = cur.TypeMeta, cur.ObjectMeta, cur.Spec, st
	return p
}

// Rejected is the status of a pod the kubelet refused to admit: the old
// status with phase Failed, the rejection's reason and message, and the
// pod's generation as status.observedGeneration (as upstream's status
// manager SetPodStatus sets it on every status it is given).
func Rejected(pod *v1.Pod, reason, message string) v1.PodStatus {
	s := *pod.Status.DeepCopy()
	s.Phase, s.Reason, s.Message = v1.PodFailed, reason, message
	s.ObservedGeneration = pod.Generation
	return s
}
