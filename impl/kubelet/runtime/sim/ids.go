package sim

import (
	"encoding/hex"
	"sync/atomic"
)

// A sandbox's or container's CRI ID is 64 hex digits, which a record kept
// as a string for as long as its pod ran (80 bytes with the string's
// header, and again as the key of the records' maps). The simulated
// runtime keeps only the record's creation number (seq, unique among the
// runtime's sandboxes and containers) and renders the ID from it when a
// CRI call returns one; an ID a caller passes in is read back to the
// number. The rendering is a bijection of the number, keyed per runtime:
// the last 16 digits are the number masked with the runtime's key, the
// first 48 a mix of those and the key, so IDs look random from their
// first digits on (as the short IDs people read are) and differ between
// the runtimes of one process.
type idKey [4]uint64

// idLen is the length of a CRI ID.
const idLen = 64

// runtimesMade numbers the runtimes of the process, each its own key.
var runtimesMade atomic.Uint64

// newIDKey returns the key of the next runtime.
func newIDKey() idKey {
	n := runtimesMade.Add(1)
	var k idKey
	for i := range k {
		k[i] = mix64(n*0x9e3779b97f4a7c15 + uint64(i)*0xbf58476d1ce4e5b9)
	}
	return k
}

// mix64 is the finalizer of splitmix64: every bit of x affects every bit
// of the result.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// words are the four 64-bit words of the ID of seq.
func (k *idKey) words(seq uint64) [4]uint64 {
	last := seq ^ k[0]
	return [4]uint64{mix64(last ^ k[1]), mix64(last ^ k[2]), mix64(last ^ k[3]), last}
}

// id is the CRI ID of the record numbered seq.
func (k *idKey) id(seq uint64) string {
	var raw [idLen / 2]byte
	putWords(&raw, k.words(seq))
	var out [idLen]byte
	hex.Encode(out[:], raw[:])
	return string(out[:])
}

// seq is the number of the record whose ID is id; false if id is no ID
// this runtime made (upper-case digits included: the runtime returns
// lower-case ones).
func (k *idKey) seq(id string) (uint64, bool) {
	if len(id) != idLen {
		return 0, false
	}
	var raw [idLen / 2]byte
	for i := range raw {
		hi, ok1 := hexDigit(id[2*i])
		lo, ok2 := hexDigit(id[2*i+1])
		if !ok1 || !ok2 {
			return 0, false
		}
		raw[i] = hi<<4 | lo
	}
	var last uint64
	for _, b := range raw[24:] {
		last = last<<8 | uint64(b)
	}
	seq := last ^ k[0]
	var want [idLen / 2]byte
	putWords(&want, k.words(seq))
	return seq, want == raw
}

// hexDigit is the value of a lower-case hex digit.
func hexDigit(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// putWords writes w big-endian into raw.
func putWords(raw *[idLen / 2]byte, w [4]uint64) {
	for i, v := range w {
		for j := range 8 {
			raw[i*8+j] = byte(v >> (56 - 8*j))
		}
	}
}
