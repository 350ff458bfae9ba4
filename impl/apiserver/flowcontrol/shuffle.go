package flowcontrol

// flowHash is the hash a flow (its FlowSchema's name and its
// distinguisher) is dealt its queues by: 64-bit FNV-1a of the two, a zero
// byte between them.
func flowHash(schema, distinguisher string) uint64 {
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	for i := 0; i < len(schema); i++ {
		h = (h ^ uint64(schema[i])) * prime
	}
	h *= prime // the zero byte
	for i := 0; i < len(distinguisher); i++ {
		h = (h ^ uint64(distinguisher[i])) * prime
	}
	return h
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
