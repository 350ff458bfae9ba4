// Package ipallocator hands out Service ClusterIPs from
// --service-cluster-ip-range (one range, or one per IP family on a
// dual-stack cluster, each with its own allocator and records: the
// primary's under /ranges/serviceips, the secondary's under
// /ranges/secondaryserviceips) and NodePorts from --service-node-port-range,
// with bitmaps of the taken offsets kept in core/v1 RangeAllocation records,
// as kube-apiserver's bitmap allocators do. Unlike kube-apiserver, which
// keeps one record per range (128 KiB for a /12), a range is split into
// blocks of 4096 offsets, one record each under the range's key
// ("/ranges/serviceips/0", "/ranges/serviceips/1", ...): a write is at most
// 512 bytes, so the watch cache's event history stays small, and creates
// landing in different blocks do not contend. A missing block is empty.
//
// Every change is a compare-and-swap on a block's revision
// (storage.Interface.GuaranteedUpdate), so concurrent creates in one or
// several API servers sharing etcd never hand out the same value twice:
// the loser of a race re-reads the block and picks again.
//
// Dynamic allocation prefers the upper part of a range and leaves a lower
// band for values clients ask for (KEP-3070 for ClusterIPs, KEP-3668 for
// NodePorts), falling back to the lower band when the upper one is full.
//
// ServiceStorage, in front of the services store, fills a service's IP
// families for the cluster (registry.InitServiceIPFamilies) and allocates
// one ClusterIP per family. Repairer is kube-apiserver's ClusterIP and
// NodePort repair controllers: every few minutes it rebuilds the records
// of each range from the services (pure decision: planRepair), recording
// what services hold but the records lost and releasing what no service
// has held for three passes.
package ipallocator

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"path"
	"slices"
	"strconv"
	"strings"

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

// blockBits is the number of offsets one record holds.
const blockBits = 4096

// Range is a bitmap of size offsets kept in RangeAllocation records, one
// per block of blockBits offsets, under key.
type Range struct {
	store storage.Interface
	key   string
	// name is the records' Range field ("10.96.0.0/12", "30000-32767").
	name string
	size int
	// reserved is the size of the lower band kept for requested values.
	reserved int
}

// NewRange returns the range of size offsets recorded under key in store
// with the given range name, keeping the lowest reserved offsets for
// explicit requests when it allocates dynamically.
func NewRange(store storage.Interface, key, name string, size, reserved int) *Range {
	return &Range{store: store, key: key, name: name, size: size, reserved: min(reserved, size)}
}

// Size is the number of offsets in the range.
func (r *Range) Size() int { return r.size }

func (r *Range) blocks() int { return (r.size + blockBits - 1) / blockBits }

func (r *Range) blockKey(b int) string { return r.key + "/" + strconv.Itoa(b) }

// record is cur made block b's record of this range holding bits.
func (r *Range) record(cur *corev1.RangeAllocation, b int, bits *big.Int) *corev1.RangeAllocation {
	out := cur.DeepCopy()
	out.Name = path.Base(r.key) + "." + strconv.Itoa(b)
	out.Range = r.name
	out.Data = bits.Bytes()
	return out
}

// update applies change to block b's bitmap with a compare-and-swap,
// retrying on conflicts; change may be called several times. Offsets
// passed to and from change are relative to the block.
func (r *Range) update(ctx context.Context, b int, change func(bits *big.Int) error) error {
	key := r.blockKey(b)
	err := r.store.GuaranteedUpdate(ctx, key, &corev1.RangeAllocation{}, true, nil,
		func(in runtime.Object) (runtime.Object, error) {
			cur, ok := in.(*corev1.RangeAllocation)
			if !ok {
				return nil, fmt.Errorf("allocation record %s is a %T", key, in)
			}
			if cur.Range != "" && cur.Range != r.name {
				return nil, fmt.Errorf("allocation record %s is for range %q, not %q (run Sync first)", key, cur.Range, r.name)
			}
			bits := new(big.Int).SetBytes(cur.Data)
			if err := change(bits); err != nil {
				return nil, err
			}
			return r.record(cur, b, bits), nil
		})
	if err != nil {
		if errors.Is(err, ErrAllocated) || errors.Is(err, ErrFull) {
			return err
		}
		return fmt.Errorf("updating allocation record %s: %w", key, err)
	}
	return nil
}

// Allocate takes offset; ErrAllocated if it is taken.
func (r *Range) Allocate(ctx context.Context, offset int) error {
	if offset < 0 || offset >= r.size {
		return ErrNotInRange
	}
	bit := offset % blockBits
	return r.update(ctx, offset/blockBits, func(bits *big.Int) error {
		if bits.Bit(bit) == 1 {
			return ErrAllocated
		}
		bits.SetBit(bits, bit, 1)
		return nil
	})
}

// AllocateNext takes a free offset: a random one in the upper band if
// there is one, else in the lower band; ErrFull when none is left.
func (r *Range) AllocateNext(ctx context.Context) (int, error) {
	for _, band := range [][2]int{{r.reserved, r.size}, {0, r.reserved}} {
		got, err := r.allocateIn(ctx, band[0], band[1])
		if !errors.Is(err, ErrFull) {
			return got, err
		}
	}
	return 0, ErrFull
}

// PeekNext returns the offset AllocateNext would take now (a free one, in
// the upper band first) without taking it, skipping the offsets in except:
// a dry run's pick. Nothing is written; a later AllocateNext may take the
// same offset.
func (r *Range) PeekNext(ctx context.Context, except []int) (int, error) {
	for _, band := range [][2]int{{r.reserved, r.size}, {0, r.reserved}} {
		got, err := r.peekIn(ctx, band[0], band[1], except)
		if !errors.Is(err, ErrFull) {
			return got, err
		}
	}
	return 0, ErrFull
}

// allocateIn takes a free offset in [lo, hi), trying its blocks from a
// random one on, and a random free bit in the block.
func (r *Range) allocateIn(ctx context.Context, lo, hi int) (int, error) {
	return r.eachBlockIn(lo, hi, func(b, from, to int) (int, error) {
		var got int
		err := r.update(ctx, b, func(bits *big.Int) error {
			var ok bool
			if got, ok = freeIn(bits, from, to, nil); !ok {
				return ErrFull
			}
			bits.SetBit(bits, got, 1)
			return nil
		})
		return got, err
	})
}

// peekIn is allocateIn reading the blocks instead of updating them, and
// passing over the offsets in except.
func (r *Range) peekIn(ctx context.Context, lo, hi int, except []int) (int, error) {
	return r.eachBlockIn(lo, hi, func(b, from, to int) (int, error) {
		bits, err := r.read(ctx, b)
		if err != nil {
			return 0, err
		}
		var skip []int
		for _, o := range except {
			if o/blockBits == b {
				skip = append(skip, o%blockBits)
			}
		}
		got, ok := freeIn(bits, from, to, skip)
		if !ok {
			return 0, ErrFull
		}
		return got, nil
	})
}

// eachBlockIn calls pick for the blocks holding [lo, hi), from a random
// one on, with the block's part of the interval (block-relative), until
// one answers other than ErrFull; it returns that block's offset in the
// range.
func (r *Range) eachBlockIn(lo, hi int, pick func(b, from, to int) (int, error)) (int, error) {
	if hi <= lo {
		return 0, ErrFull
	}
	first, last := lo/blockBits, (hi-1)/blockBits
	n := last - first + 1
	start := rand.IntN(n)
	for i := range n {
		b := first + (start+i)%n
		base := b * blockBits
		got, err := pick(b, max(lo, base)-base, min(hi, base+blockBits)-base)
		if err == nil {
			return base + got, nil
		}
		if !errors.Is(err, ErrFull) {
			return 0, err
		}
	}
	return 0, ErrFull
}

// freeIn finds a clear bit in [lo, hi) not in skip, scanning from a
// random start.
func freeIn(bits *big.Int, lo, hi int, skip []int) (int, bool) {
	n := hi - lo
	if n <= 0 {
		return 0, false
	}
	start := rand.IntN(n)
	for i := range n {
		o := lo + (start+i)%n
		if bits.Bit(o) == 0 && !slices.Contains(skip, o) {
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
	bit := offset % blockBits
	return r.update(ctx, offset/blockBits, func(bits *big.Int) error {
		bits.SetBit(bits, bit, 0)
		return nil
	})
}

// Has reports whether offset is taken (a quorum read).
func (r *Range) Has(ctx context.Context, offset int) (bool, error) {
	if offset < 0 || offset >= r.size {
		return false, nil
	}
	bits, err := r.read(ctx, offset/blockBits)
	if err != nil {
		return false, err
	}
	return bits.Bit(offset%blockBits) == 1, nil
}

// read returns block b's bitmap (a quorum read); a missing block, or one
// recorded for another range, is empty.
func (r *Range) read(ctx context.Context, b int) (*big.Int, error) {
	var rec corev1.RangeAllocation
	key := r.blockKey(b)
	if err := r.store.Get(ctx, key, storage.GetOptions{IgnoreNotFound: true}, &rec); err != nil {
		return nil, fmt.Errorf("reading allocation record %s: %w", key, err)
	}
	if rec.Range != "" && rec.Range != r.name {
		return new(big.Int), nil
	}
	return new(big.Int).SetBytes(rec.Data), nil
}

// records reads every block record of the range, by block.
func (r *Range) records(ctx context.Context) (map[int]*corev1.RangeAllocation, error) {
	var list RecordList
	if err := r.store.GetList(ctx, r.key, storage.ListOptions{Recursive: true, Predicate: storage.Everything()}, &list); err != nil {
		return nil, fmt.Errorf("listing allocation records under %s: %w", r.key, err)
	}
	out := map[int]*corev1.RangeAllocation{}
	for i := range list.Items {
		rec := &list.Items[i]
		_, suffix, _ := strings.Cut(rec.Name, ".")
		if b, err := strconv.Atoi(suffix); err == nil {
			out[b] = rec
		}
	}
	return out, nil
}

// Free counts the free offsets (a quorum read).
func (r *Range) Free(ctx context.Context) (int, error) {
	recs, err := r.records(ctx)
	if err != nil {
		return 0, err
	}
	used := 0
	for b, rec := range recs {
		if b >= r.blocks() || rec.Range != r.name {
			continue
		}
		for _, x := range rec.Data {
			for ; x != 0; x &= x - 1 {
				used++
			}
		}
	}
	return r.size - used, nil
}

// Sync makes the records describe this range: a block record written for
// another range (the flag changed), or missing while stored objects hold
// offsets in it (data from before the allocator), is rebuilt from used,
// the offsets the stored objects hold. It runs at start; Repairer then
// checks the records of this range against the services every few
// minutes. Records already for this range are kept.
func (r *Range) Sync(ctx context.Context, used []int) error {
	recs, err := r.records(ctx)
	if err != nil {
		return err
	}
	byBlock := map[int][]int{}
	for _, o := range used {
		if o >= 0 && o < r.size {
			byBlock[o/blockBits] = append(byBlock[o/blockBits], o%blockBits)
		}
	}
	for b := range r.blocks() {
		rec, exists := recs[b]
		switch {
		case exists && rec.Range == r.name:
			continue
		case !exists && len(byBlock[b]) == 0:
			continue
		}
		key := r.blockKey(b)
		err := r.store.GuaranteedUpdate(ctx, key, &corev1.RangeAllocation{}, true, nil,
			func(in runtime.Object) (runtime.Object, error) {
				cur, ok := in.(*corev1.RangeAllocation)
				if !ok {
					return nil, fmt.Errorf("allocation record %s is a %T", key, in)
				}
				if cur.Range == r.name {
					return cur, nil
				}
				bits := new(big.Int)
				for _, o := range byBlock[b] {
					bits.SetBit(bits, o, 1)
				}
				return r.record(cur, b, bits), nil
			})
		if err != nil {
			return fmt.Errorf("syncing allocation record %s: %w", key, err)
		}
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
