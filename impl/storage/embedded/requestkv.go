package embedded

import (
	"context"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// requestKV is the in-process client's KV (v3client's) with one more
// method, TxnRequest, which sends a transaction request the caller built
// to the same KV service (quota, size and interval checks, then the
// server's Txn) instead of clientv3 building one from Ops, which copies
// every key and value into the request and allocates the Op, Cmp and
// RequestOp wrappers one by one. Its answer and errors are clientv3's
// Txn's: the response as the server gave it, errors as Commit returns
// them (clientv3.ContextError).
type requestKV struct {
	clientv3.KV
	remote pb.KVClient
}

// TxnRequest sends r as it is. The server encodes r into its raft proposal
// before it returns and keeps nothing of r after, so r's keys and values
// may be views of buffers the caller reuses once TxnRequest returned.
func (kv requestKV) TxnRequest(ctx context.Context, r *pb.TxnRequest) (*pb.TxnResponse, error) {
	resp, err := kv.remote.Txn(ctx, r)
	if err != nil {
		return nil, clientv3.ContextError(ctx, err)
	}
	return resp, nil
}
