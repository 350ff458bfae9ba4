package endpoints

import (
	"fmt"
	"runtime"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
)

// applyJSONPatch applies ops to doc with the JSON patch library
// kube-apiserver uses (gopkg.in/evanphx/json-patch.v4), guarding against
// one of its bugs: a "test" operation that compares two arrays of the
// same length, one of which holds null (in the operation's value, or put
// into the document by an earlier operation), dereferences the null's
// nil node and panics. kube-apiserver's handler panics the same way and
// answers 500; here the patch is refused (the caller's 422, as for any
// patch that does not apply) with jsonpatch.ErrTestFailed. Such a test is
// refused even where RFC 6902 would let it pass (null against null): the
// library cannot say. Any other panic — or one from a patch without a
// test operation — is not this bug and is left to the panic recovery.
func applyJSONPatch(ops jsonpatch.Patch, doc []byte) (patched []byte, err error) {
	defer func() {
		p := recover()
		if p == nil {
			return
		}
		if _, isRuntime := p.(runtime.Error); !isRuntime || !hasTestOperation(ops) {
			panic(p)
		}
		patched = nil
		err = fmt.Errorf("a test operation compares an array holding null, which the JSON patch library cannot evaluate: %w", jsonpatch.ErrTestFailed)
	}()
	return ops.Apply(doc)
}

// hasTestOperation reports whether ops holds a "test" operation.
func hasTestOperation(ops jsonpatch.Patch) bool {
	for _, op := range ops {
		if op.Kind() == "test" {
			return true
		}
	}
	return false
}
