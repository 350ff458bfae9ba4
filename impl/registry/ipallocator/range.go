// Package ipallocator hands out Service ClusterIPs from
// --service-cluster-ip-range and NodePorts from --service-node-port-range,
// as kube-apiserver's bitmap allocators do: each range is one
// core/v1 RangeAllocation record in storage ("/ranges/serviceips",
// "/ranges/servicenodeports") whose data is a bitmap of the taken offsets.
//
// Every change is a compare-and-swap on the record's revision
// (storage.Interface.GuaranteedUpdate), so concurrent creates in one or
// several API servers sharing etcd never hand out the same value twice:
// the loser of a race re-reads the bitmap and picks again.
//
// Dynamic allocation prefers the upper part of a range and leaves a lower
// band for values clients ask for (KEP-3070 for ClusterIPs, KEP-3668 for
// NodePorts), falling back to the lower band when the upper one is full.
package ipallocator

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"path"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubeproof/kubeproof/impl/storage"
)

// Errors of Allocate and AllocateNext.
var (
	// ErrAllocated: the requested value is taken.
	ErrAllocated = errors.New("provided value is already allocated")
	// ErrFull: no free value is left.
	ErrFull = errors.New("range is full")
	// ErrNotInRange: the value is outside the range.
	ErrNotInRange = errors.New("provided value is not in the valid range")
)

// Range is a bitmap of size offsets kept in one RangeAllocation record.
type Range struct {
	store storage.Interface
	key   string
	// name is the record's Range field ("10.96.0.0/12", "30000-32767").
	name string
	size int
	// reserved is the size of the lower band kept for requested values.
	reserved int
}

// NewRange returns the range of size offsets recorded at key in store under
// the given range name, keeping the lowest reserved offsets for explicit
// requests when it allocates dynamically.
func NewRange(store storage.Interface, key, name string, size, reserved int) *Range {
	return &Range{store: store, key: key, name: name, size: size, reserved: min(reserved, size)}
}

// Size is the number of offsets in the range.
func (r *Range) Size() int { return r.size }

// update applies change to the current bitmap with a compare-and-swap,
// retrying on conflicts; change may be called several times.
func (r *Range) update(ctx context.Context, change func(bits *big.Int) error) error {
	err := r.store.GuaranteedUpdate(ctx, r.key, &corev1.RangeAllocation{}, true, nil,
		func(in runtime.Object) (runtime.Object, error) {
			cur, ok := in.(*corev1.RangeAllocation)
			if !ok {
				return nil, fmt.Errorf("allocation record %s is a %T", r.key, in)
			}
			if cur.Range != "" && cur.Range != r.name {
				return nil, fmt.Errorf("allocation record %s is for range %q, not %q (run Sync first)", r.key, cur.Range, r.name)
			}
			bits := new(big.Int).SetBytes(cur.Data)
			if err := change(bits); err != nil {
				return nil, err
			}
			out := cur.DeepCopy()
			out.Name = path.Base(r.key)
			out.Range = r.name
			out.Data = bits.Bytes()
			return out, nil
		})
	if err != nil {
		return fmt.Errorf("updating allocation record %s: %w", r.key, err)
	}
	return nil
}

// Allocate takes offset; ErrAllocated if it is taken.
func (r *Range) Allocate(ctx context.Context, offset int) error {
	if offset < 0 || offset >= r.size {
		return ErrNotInRange
	}
	return r.update(ctx, func(bits *big.Int) error {
		if bits.Bit(offset) == 1 {
			return ErrAllocated
		}
		bits.SetBit(bits, offset, 1)
		return nil
	})
}

// AllocateNext takes a free offset: a random one in the upper band if
// there is one, else in the lower band; ErrFull when none is left.
func (r *Range) AllocateNext(ctx context.Context) (int, error) {
	var got int
	err := r.update(ctx, func(bits *big.Int) error {
		var ok bool
		if got, ok = freeIn(bits, r.reserved, r.size); ok {
			bits.SetBit(bits, got, 1)
			return nil
		}
		if got, ok = freeIn(bits, 0, r.reserved); ok {
			bits.SetBit(bits, got, 1)
			return nil
		}
		return ErrFull
	})
	return got, err
}

// freeIn finds a clear bit in [lo, hi), scanning from a random start.
func freeIn(bits *big.Int, lo, hi int) (int, bool) {
	n := hi - lo
	if n <= 0 {
		return 0, false
	}
	start := rand.IntN(n)
	for i := range n {
		o := lo + (start+i)%n
		if bits.Bit(o) == 0 {
			return o, true
		}
	}
	return 0, false
}

// Release frees offset; releasing a free or out-of-range offset does
// nothing.
func (r *Range) Release(ctx context.Context, offset int) error {
	if offset < 0 || offset >= r.size {
		return nil
	}
	return r.update(ctx, func(bits *big.Int) error {
		bits.SetBit(bits, offset, 0)
		return nil
	})
}

// Has reports whether offset is taken (a quorum read).
func (r *Range) Has(ctx context.Context, offset int) (bool, error) {
	var rec corev1.RangeAllocation
	if err := r.store.Get(ctx, r.key, storage.GetOptions{IgnoreNotFound: true}, &rec); err != nil {
		return false, fmt.Errorf("reading allocation record %s: %w", r.key, err)
	}
	if rec.Range != "" && rec.Range != r.name {
		return false, nil
	}
	return new(big.Int).SetBytes(rec.Data).Bit(offset) == 1, nil
}

// Free counts the free offsets (a quorum read).
func (r *Range) Free(ctx context.Context) (int, error) {
	var rec corev1.RangeAllocation
	if err := r.store.Get(ctx, r.key, storage.GetOptions{IgnoreNotFound: true}, &rec); err != nil {
		return 0, fmt.Errorf("reading allocation record %s: %w", r.key, err)
	}
	used := 0
	for _, b := range rec.Data {
		for ; b != 0; b &= b - 1 {
			used++
		}
	}
	return r.size - used, nil
}

// Sync makes the record describe this range: when it is missing or was
// written for another range (the flag changed), it is rebuilt from used,
// the offsets the stored objects hold (kube-apiserver's repair
// controllers do this continuously; here it runs at start). A record
// already for this range is kept.
func (r *Range) Sync(ctx context.Context, used []int) error {
	err := r.store.GuaranteedUpdate(ctx, r.key, &corev1.RangeAllocation{}, true, nil,
		func(in runtime.Object) (runtime.Object, error) {
			cur, ok := in.(*corev1.RangeAllocation)
			if !ok {
				return nil, fmt.Errorf("allocation record %s is a %T", r.key, in)
			}
			if cur.Range == r.name {
				return cur, nil
			}
			bits := new(big.Int)
			for _, o := range used {
				if o >= 0 && o < r.size {
					bits.SetBit(bits, o, 1)
				}
			}
			out := cur.DeepCopy()
			out.Name = path.Base(r.key)
			out.Range = r.name
			out.Data = bits.Bytes()
			return out, nil
		})
	if err != nil {
		return fmt.Errorf("syncing allocation record %s: %w", r.key, err)
	}
	return nil
}

// RecordList is the list kind of allocation records, for a store's
// NewListFunc (RangeAllocation has no list kind of its own).
type RecordList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []corev1.RangeAllocation `json:"items"`
}

// DeepCopyObject implements runtime.Object.
func (l *RecordList) DeepCopyObject() runtime.Object {
	out := &RecordList{TypeMeta: l.TypeMeta}
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	for i := range l.Items {
		out.Items = append(out.Items, *l.Items[i].DeepCopy())
	}
	return out
}
