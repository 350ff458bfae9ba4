package etcd3

import (
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// opPut hands etcd's client a view of a buffer that goes back to the pool
// right after the write; that is only sound while OpPut copies the value.
func TestOpPutOwnsItsValue(t *testing.T) {
	data := []byte("stored-object")
	op := opPut("/registry/k", data, clientv3.NoLease)
	copy(data, "XXXXXXXXXXXXX")
	if got := string(op.ValueBytes()); got != "stored-object" {
		t.Fatalf("the Op's value changed with the buffer: %q", got)
	}
}
