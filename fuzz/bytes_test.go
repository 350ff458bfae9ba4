package fuzz

import (
	"slices"
	"strconv"
)

// input hands out the fuzzer's bytes as small decisions. When the bytes
// run out every decision is its zero value, so any input is usable and
// short inputs mean simple cases.
type input struct {
	data []byte
}

// byte returns the next byte, or 0 at the end.
func (in *input) byte() byte {
	if len(in.data) == 0 {
		return 0
	}
	b := in.data[0]
	in.data = in.data[1:]
	return b
}

// intn returns a number in [0, n).
func (in *input) intn(n int) int {
	if n <= 1 {
		return 0
	}
	v := int(in.byte())
	if n > 256 {
		v = v<<8 | int(in.byte())
	}
	return v % n
}

// bool returns the next byte's low bit.
func (in *input) bool() bool { return in.byte()&1 == 1 }

// pick returns one of options.
func pick[T any](in *input, options []T) T { return options[in.intn(len(options))] }

// bytes returns up to max of the next bytes (the length is decided by one
// byte).
func (in *input) bytes(max int) []byte {
	n := in.intn(max + 1)
	if n > len(in.data) {
		n = len(in.data)
	}
	b := in.data[:n]
	in.data = in.data[n:]
	return b
}

// string returns up to max of the next bytes as a string.
func (in *input) string(max int) string { return string(in.bytes(max)) }

// rest returns every remaining byte.
func (in *input) rest() []byte {
	b := in.data
	in.data = nil
	return b
}

// number returns an interesting decimal number as a string: small, large,
// negative, or at int32/int64 bounds.
func (in *input) number() string {
	switch in.intn(8) {
	case 0:
		return "0"
	case 1:
		return "-1"
	case 2:
		return "2147483648"
	case 3:
		return "9223372036854775807"
	case 4:
		return "99999999999999999999"
	case 5:
		return strconv.Itoa(in.intn(1 << 16))
	case 6:
		return strconv.Itoa(-in.intn(1 << 16))
	default:
		return strconv.Itoa(in.intn(10))
	}
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
