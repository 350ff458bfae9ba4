package etcd3

import (
	"context"
	"unsafe"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// RequestTxner is a clientv3.KV that also sends transaction requests built
// by the caller, as the embedded etcd's in-process client does
// (embedded.Etcd.InProcessClient). Its answers and errors are those of
// clientv3's Txn(ctx)...Commit() for the same request.
type RequestTxner interface {
	TxnRequest(ctx context.Context, r *pb.TxnRequest) (*pb.TxnResponse, error)
}

// createTxn is a create's transaction, If(ModRevision(k) == 0) Then
// Put(k, data), in one allocation: the request clientv3 sends for
// Txn(ctx).If(Compare(ModRevision(k), "=", 0)).Then(OpPut(k, data)),
// which takes ten (the key copied twice and the value once among them).
type createTxn struct {
	req    pb.TxnRequest
	cmps   [1]*pb.Compare
	cmp    pb.Compare
	modRev pb.Compare_ModRevision
	ops    [1]*pb.RequestOp
	op     pb.RequestOp
	put    pb.RequestOp_RequestPut
	putReq pb.PutRequest
}

// newCreateTxn returns the create's request of data at k, attached to
// lease (clientv3.NoLease: none), with the precondition unless
// precondition is false (a fault). The request's key and value are views
// of k and data: it must not outlive them.
func newCreateTxn(k string, data []byte, lease clientv3.LeaseID, precondition bool) *pb.TxnRequest {
	t := new(createTxn)
	key := unsafe.Slice(unsafe.StringData(k), len(k))
	t.putReq = pb.PutRequest{Key: key, Value: data, Lease: int64(lease)}
	t.put.RequestPut = &t.putReq
	t.op.Request = &t.put
	t.ops[0] = &t.op
	t.req.Success = t.ops[:]
	if precondition {
		t.cmp = pb.Compare{Result: pb.Compare_EQUAL, Target: pb.Compare_MOD, Key: key, TargetUnion: &t.modRev}
		t.cmps[0] = &t.cmp
		t.req.Compare = t.cmps[:]
	}
	return &t.req
}

// txnCreate writes data at k, attached to lease, if k does not exist.
// With a RequestTxner it sends newCreateTxn's request (data may be a
// pooled buffer: the server encodes the request before it answers);
// otherwise clientv3's Txn.
func (s *Store) txnCreate(ctx context.Context, k string, data []byte, lease clientv3.LeaseID, precondition bool) (succeeded bool, rev int64, err error) {
	if s.requestTxn != nil {
		resp, err := s.requestTxn.TxnRequest(ctx, newCreateTxn(k, data, lease, precondition))
		if err != nil {
			return false, 0, err
		}
		return resp.Succeeded, resp.Header.Revision, nil
	}
	var cmps []clientv3.Cmp
	if precondition {
		cmps = []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(k), "=", 0)}
	}
	resp, err := s.client.KV.Txn(ctx).If(cmps...).Then(opPut(k, data, lease)).Commit()
	if err != nil {
		return false, 0, err
	}
	return resp.Succeeded, resp.Header.Revision, nil
}
