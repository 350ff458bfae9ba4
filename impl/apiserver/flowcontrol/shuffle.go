package flowcontrol

import (
	"crypto/sha256"
	"encoding/binary"
)

// flowHash is the hash a flow (its FlowSchema's name and its
// distinguisher) is dealt its queues by, as kube-apiserver computes it:
// the first 8 bytes, little-endian, of the SHA-256 of the schema's name,
// a zero byte and the distinguisher. So a flow gets the same queues here
// as there, given the same queue counts and hand sizes.
func flowHash(schema, distinguisher string) uint64 {
	var buf [128]byte // names and distinguishers are short: no allocation
	b := append(buf[:0], schema...)
	b = append(b, 0)
	b = append(b, distinguisher...)
	sum := sha256.Sum256(b)
	return binary.LittleEndian.Uint64(sum[:8])
}

// deal is shuffle sharding: it deals hand distinct queue indices out of
// deck from hash, appending them to dst. The same hash always gets the
// same hand; two flows share all their queues only when their hashes
// collide on every card. hash is read as a mixed-radix number: the i-th
// card is digit i (base deck-i), taken as an index into the cards not yet
// dealt.
func deal(hash uint64, deck, hand int, dst []int) []int {
	var buf [16]int
	dealt := buf[:0] // ascending
	for i := 0; i < hand && i < deck; i++ {
		left := uint64(deck - i)
		card := int(hash % left)
		hash /= left
		// card is the card-th undealt index: step over every dealt index
		// at or below it, in ascending order.
		at := 0
		for ; at < len(dealt) && dealt[at] <= card; at++ {
			card++
		}
		dealt = append(dealt, 0)
		copy(dealt[at+1:], dealt[at:])
		dealt[at] = card
		dst = append(dst, card)
	}
	return dst
}
