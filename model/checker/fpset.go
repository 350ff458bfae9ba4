package checker

import (
	"encoding/binary"
	"math/bits"
	"sync"
	"sync/atomic"
)

// fingerprint is a 64-bit hash of a state's canonical encoding. Two distinct
// states collide with probability about n²/2⁶⁵ for n states (about 3·10⁻⁶
// for ten million), the same trade TLC makes with its 64-bit fingerprints.
// Zero is reserved (it marks empty slots).
func fingerprint(b []byte) uint64 {
	const m1, m2 = 0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F
	h := uint64(len(b)) * m1
	for len(b) >= 8 {
		k := binary.LittleEndian.Uint64(b) * m2
		h ^= bits.RotateLeft64(k, 31) * m1
		h = bits.RotateLeft64(h, 27)*5 + 0x52dce729
		b = b[8:]
	}
	var tail uint64
	for i, c := range b {
		tail |= uint64(c) << (8 * i)
	}
	h ^= bits.RotateLeft64(tail*m2, 31) * m1
	// fmix64 (MurmurHash3 finaliser)
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	if h == 0 {
		h = 1
	}
	return h
}

// noState marks "no parent" (an initial state).
const noState = ^uint32(0)

// fpSet is the set of visited states. It maps each state's fingerprint to a
// dense id (open-addressing tables sharded by fingerprint, so workers rarely
// contend) and keeps, per id, the fingerprint and the parent id (for
// counterexample traces) and the liveness goals the state fails.
type fpSet struct {
	shards  [256]fpShard
	next    atomic.Uint32
	fps     chunked[uint64]
	parents chunked[uint32]
	goals   chunked[uint8]
}

type fpShard struct {
	mu   sync.Mutex
	keys []uint64
	ids  []uint32
	n    int
	_    [16]byte // keep shards on separate cache lines
}

func newFPSet() *fpSet {
	s := &fpSet{}
	for i := range s.shards {
		s.shards[i].keys = make([]uint64, 256)
		s.shards[i].ids = make([]uint32, 256)
	}
	return s
}

// insert adds fp (reached from parent) and returns its id and whether it
// was new.
func (s *fpSet) insert(fp uint64, parent uint32, goals uint8) (uint32, bool) {
	sh := &s.shards[fp&255]
	sh.mu.Lock()
	if (sh.n+1)*4 > len(sh.keys)*3 {
		sh.grow()
	}
	mask := uint64(len(sh.keys) - 1)
	for i := (fp >> 8) & mask; ; i = (i + 1) & mask {
		switch sh.keys[i] {
		case fp:
			id := sh.ids[i]
			sh.mu.Unlock()
			return id, false
		case 0:
			id := s.next.Add(1) - 1
			sh.keys[i], sh.ids[i] = fp, id
			sh.n++
			sh.mu.Unlock()
			s.fps.set(id, fp)
			s.parents.set(id, parent)
			s.goals.set(id, goals)
			return id, true
		}
	}
}

func (sh *fpShard) grow() {
	oldK, oldI := sh.keys, sh.ids
	sh.keys = make([]uint64, 2*len(oldK))
	sh.ids = make([]uint32, 2*len(oldK))
	mask := uint64(len(sh.keys) - 1)
	for j, fp := range oldK {
		if fp == 0 {
			continue
		}
		i := (fp >> 8) & mask
		for sh.keys[i] != 0 {
			i = (i + 1) & mask
		}
		sh.keys[i], sh.ids[i] = fp, oldI[j]
	}
}

func (s *fpSet) size() int { return int(s.next.Load()) }

// bytesPerState is the memory the set holds per visited state.
func (s *fpSet) bytesPerState() float64 {
	slots := 0
	for i := range s.shards {
		slots += len(s.shards[i].keys)
	}
	n := s.size()
	if n == 0 {
		return 0
	}
	return float64(slots*12+n*(8+4+1)) / float64(n)
}

// chunked is an array indexed by state id that grows in fixed chunks, so
// concurrent writers to different ids never move each other's data.
type chunked[T any] struct {
	chunks [1 << 14]atomic.Pointer[[1 << 16]T]
	mu     sync.Mutex
}

func (c *chunked[T]) set(id uint32, v T) {
	ch := c.chunks[id>>16].Load()
	if ch == nil {
		c.mu.Lock()
		if ch = c.chunks[id>>16].Load(); ch == nil {
			ch = new([1 << 16]T)
			c.chunks[id>>16].Store(ch)
		}
		c.mu.Unlock()
	}
	ch[id&0xffff] = v
}

func (c *chunked[T]) get(id uint32) T { return c.chunks[id>>16].Load()[id&0xffff] }
