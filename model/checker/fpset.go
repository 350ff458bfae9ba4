package checker

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"os"
	"sync"
	"sync/atomic"
	"unsafe"
)

// fingerprint is a 64-bit hash of a state's canonical encoding. Two distinct
// states collide with probability about n²/2⁶⁵ for n states (about 3·10⁻⁶
// for ten million), the same trade TLC makes with its 64-bit fingerprints.
// Zero is reserved.
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

// fpSet is the set of visited states: it maps each state's fingerprint to a
// dense id and keeps, per id, the fingerprint, the liveness goals the state
// fails and, on disk, the parent id (for counterexample traces).
//
// Layout. The set is 256 shards, chosen by the fingerprint's low byte, each
// behind its own mutex so workers rarely contend. A shard stores its states
// in blocks of blockSize: the fingerprints (8 bytes each) and goal masks (1
// byte each) side by side, one allocation of exactly a size class (576
// bytes). A state's id is its block's global number × blockSize + its place
// in the block; blocks get global numbers from one counter as shards fill
// them, so ids are dense but for each shard's unfilled last block (at most
// 256×63 unused ids, which the liveness check sees as isolated states).
// The shard's hash table is open addressing with linear probing over 4-byte
// slots: the state's index within the shard + 1 (24 bits) and 8 more bits
// of its fingerprint as a tag, so a probe reads the stored fingerprint only
// when the tag matches (1 in 256 for another state). The fingerprint is thus
// stored once. A table grows by a quarter when it is 85% full, so its load
// stays between 68% and 85% (4.7–5.9 bytes a state); growing reads the
// shard's own blocks in order, not the table.
//
// Parents (4 bytes a state) go to a temporary file at id×4: a block's
// parents are buffered in memory until the block is full, then written with
// one pwrite, and read back only to print a counterexample. The file is
// unlinked as soon as it is created (close releases it), so nothing is left
// behind on cancellation, error or crash.
type fpSet struct {
	shards     [256]fpShard
	nextBlock  atomic.Uint32
	mu         sync.Mutex // guards byID, file, err
	byID       []*fpBlock // global block number → block
	file       *os.File   // the parents, 4 bytes little endian at id×4; nil until the first block fills
	err        error      // first failure writing parents
	failed     atomic.Bool
	overflowed atomic.Bool
}

const (
	blockSize   = 64
	initSlots   = 64
	localLimit  = 1<<24 - 1 // states per shard: slot indexes are 24 bits
	tagShift    = 24
	parentBytes = 4
)

type fpBlock struct {
	fps   [blockSize]uint64
	goals [blockSize]uint8
}

// blockRef is a block with its global number (side by side, so a lookup
// that finds its state reads one entry of the shard's list).
type blockRef struct {
	b   *fpBlock
	gid uint32
}

type fpShard struct {
	mu      sync.Mutex
	slots   []uint32           // 0 empty, else tag<<24 | (local index + 1)
	n       int                // states in the shard
	blocks  []blockRef         // the shard's blocks in order, with their global numbers
	parents *[blockSize]uint32 // parents of the last block until it is full and written
	_       [56]byte           // 128 bytes: keep shards on separate cache lines
}

func newFPSet() *fpSet {
	s := &fpSet{}
	for i := range s.shards {
		s.shards[i].slots = make([]uint32, initSlots)
	}
	return s
}

// home is the first slot probed for fp in a table of n slots: fingerprint
// bits 8–39 scaled to [0, n), so n need not be a power of two.
func home(fp uint64, n int) int {
	return int((uint64(uint32(fp>>8)) * uint64(n)) >> 32)
}

// insert adds fp (reached from parent, failing the liveness goals in goals)
// and returns its id and whether it was new. Beyond 2²⁴−1 states in one
// shard it records the overflow (see err) and returns noState, false.
func (s *fpSet) insert(fp uint64, parent uint32, goals uint8) (uint32, bool) {
	sh := &s.shards[fp&255]
	tag := uint32(fp>>56) << tagShift
	sh.mu.Lock()
	if (sh.n+1)*20 > len(sh.slots)*17 {
		sh.grow()
	}
	slots := sh.slots
	for i := home(fp, len(slots)); ; {
		v := slots[i]
		if v == 0 {
			break
		}
		if v&^(1<<tagShift-1) == tag {
			local := int(v&(1<<tagShift-1)) - 1
			if r := sh.blocks[local/blockSize]; r.b.fps[local%blockSize] == fp {
				id := r.gid*blockSize + uint32(local%blockSize)
				sh.mu.Unlock()
				return id, false
			}
		}
		if i++; i == len(slots) {
			i = 0
		}
	}
	local := sh.n
	if local >= localLimit {
		sh.mu.Unlock()
		s.overflowed.Store(true)
		return noState, false
	}
	if local%blockSize == 0 {
		s.newBlock(sh)
	}
	r, j := sh.blocks[local/blockSize], local%blockSize
	r.b.fps[j], r.b.goals[j] = fp, goals
	gid := r.gid
	sh.parents[j] = parent
	sh.n++
	sh.place(fp, uint32(local+1)|tag)
	if j == blockSize-1 {
		s.writeParents(gid, sh.parents)
	}
	sh.mu.Unlock()
	return gid*blockSize + uint32(j), true
}

// place puts slot value v for fp in the first free slot from its home.
func (sh *fpShard) place(fp uint64, v uint32) {
	slots := sh.slots
	i := home(fp, len(slots))
	for slots[i] != 0 {
		if i++; i == len(slots) {
			i = 0
		}
	}
	slots[i] = v
}

func (sh *fpShard) grow() {
	sh.slots = make([]uint32, len(sh.slots)+len(sh.slots)/4)
	for local := range sh.n {
		fp := sh.blocks[local/blockSize].b.fps[local%blockSize]
		sh.place(fp, uint32(local+1)|uint32(fp>>56)<<tagShift)
	}
}

// newBlock starts a new block in sh (under sh.mu).
func (s *fpSet) newBlock(sh *fpShard) {
	b := new(fpBlock)
	gid := s.nextBlock.Add(1) - 1
	sh.blocks = append(sh.blocks, blockRef{b, gid})
	if sh.parents == nil {
		sh.parents = new([blockSize]uint32)
	}
	s.mu.Lock()
	if int(gid) >= len(s.byID) {
		s.byID = append(s.byID, make([]*fpBlock, int(gid)+1-len(s.byID))...)
	}
	s.byID[gid] = b
	s.mu.Unlock()
}

// writeParents writes block gid's parents to the file at gid×blockSize×4.
func (s *fpSet) writeParents(gid uint32, p *[blockSize]uint32) {
	var buf [blockSize * parentBytes]byte
	for i, v := range p {
		binary.LittleEndian.PutUint32(buf[i*parentBytes:], v)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return
	}
	if s.file == nil {
		f, err := os.CreateTemp("", "kubeproof-model-parents-*")
		if err != nil {
			s.fail(fmt.Errorf("creating the parents file: %w", err))
			return
		}
		// Unlinked at once: the open file lives until close, and nothing
		// stays behind whatever ends the run.
		if err := os.Remove(f.Name()); err != nil {
			f.Close()
			s.fail(fmt.Errorf("unlinking the parents file: %w", err))
			return
		}
		s.file = f
	}
	if _, err := s.file.WriteAt(buf[:], int64(gid)*blockSize*parentBytes); err != nil {
		s.fail(fmt.Errorf("writing parents of block %d: %w", gid, err))
	}
}

func (s *fpSet) fail(err error) {
	s.err = err
	s.failed.Store(true)
}

// failure reports a failure to store parents or a shard overflow.
func (s *fpSet) failure() error {
	if s.overflowed.Load() {
		return errors.New("more than 2^24-1 states in one fingerprint-set shard")
	}
	if s.failed.Load() {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.err
	}
	return nil
}

// close releases the parents file.
func (s *fpSet) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.file != nil {
		s.file.Close()
		s.file = nil
	}
}

// size is the number of ids handed out: the distinct states plus the unused
// tails of the shards' last blocks.
func (s *fpSet) size() int { return int(s.nextBlock.Load()) * blockSize }

// The accessors by id are for after the search (no insert running).

func (s *fpSet) fp(id uint32) uint64 { return s.byID[id/blockSize].fps[id%blockSize] }

func (s *fpSet) goals(id uint32) uint8 {
	if b := s.byID[id/blockSize]; b != nil {
		return b.goals[id%blockSize]
	}
	return 0
}

// parent reads id's parent: from the shard's buffer if its block is not
// full yet, else from the file.
func (s *fpSet) parent(id uint32) (uint32, error) {
	gid := id / blockSize
	for i := range s.shards {
		sh := &s.shards[i]
		if len(sh.blocks) > 0 && sh.blocks[len(sh.blocks)-1].gid == gid && sh.n%blockSize != 0 {
			return sh.parents[id%blockSize], nil
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.file == nil {
		return 0, fmt.Errorf("reading the parent of state %d: no parents file", id)
	}
	var b [parentBytes]byte
	if _, err := s.file.ReadAt(b[:], int64(id)*parentBytes); err != nil {
		return 0, fmt.Errorf("reading the parent of state %d: %w", id, err)
	}
	return binary.LittleEndian.Uint32(b[:]), nil
}

// bytesPerState is the memory the set holds per distinct state: the hash
// tables' slots (4 bytes each, counting the empty ones), the fingerprint
// and goal blocks (576 bytes per 64 ids, counting the unfilled tails),
// the block lists, the parents buffers of the blocks being filled and the
// shard array itself. On disk, not counted: the parents of full blocks (4
// bytes a state). Not counted either: the old table of a shard while it
// grows (transient, one shard at a time per worker), and the frontier and
// the liveness edges (not part of the visited set).
func (s *fpSet) bytesPerState() float64 {
	n := 0
	bytes := int(unsafe.Sizeof(*s))
	for i := range s.shards {
		sh := &s.shards[i]
		n += sh.n
		bytes += cap(sh.slots)*4 + len(sh.blocks)*int(unsafe.Sizeof(fpBlock{})) +
			cap(sh.blocks)*int(unsafe.Sizeof(blockRef{}))
		if sh.parents != nil {
			bytes += blockSize * 4
		}
	}
	bytes += cap(s.byID) * 8
	if n == 0 {
		return 0
	}
	return float64(bytes) / float64(n)
}
