package filters

import "net/http"

// writeStackBytes is about the stack a write reaches below the filter
// chain: RBAC's rule walk, the managed-fields computation (recursive over
// the object) and the etcd client, under the HTTP/2 frames.
const writeStackBytes = 24 << 10

// WithStackReserve grows the stack of a write's goroutine once, at the top
// of the chain, to what the write will need. net/http runs every HTTP/2
// request on a new goroutine with the runtime's smallest stack; left
// alone, a create doubles it several times at its deepest points (the
// authorizer, the managed-fields walk, TLS), each time copying and
// adjusting every frame then on the stack, which is proportional to the
// depth it happens at. Here only a handful of frames are copied, once.
// Reads are left alone: a watch lives long and would keep the larger stack.
func WithStackReserve(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
			reserveStack()
		}
		next.ServeHTTP(w, r)
	})
}

// stackReserveNever is never true: it keeps the compiler from dropping
// reserveStack's frame while sparing the zeroing of the array.
var stackReserveNever bool

// reserveStack has a writeStackBytes frame, so calling it makes the runtime
// grow the stack to fit it in one step (its prologue checks the whole
// frame) without the array being written.
//
//go:noinline
func reserveStack() {
	if stackReserveNever {
		var pad [writeStackBytes]byte
		touchStack(pad[:])
	}
}

//go:noinline
func touchStack(b []byte) { b[0] = 1 }
