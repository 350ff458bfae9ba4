package etcd3_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/storage/etcd3"
	"github.com/kubeproof/kubeproof/impl/storage/storagetest"
)

// recordingKV is etcd's KV service as a client sees it, answering every
// Txn with success at revision 7 and keeping the last request.
type recordingKV struct {
	pb.KVClient // only Txn is called
	last        *pb.TxnRequest
}

func (kv *recordingKV) Txn(_ context.Context, r *pb.TxnRequest, _ ...grpc.CallOption) (*pb.TxnResponse, error) {
	kv.last = r
	return &pb.TxnResponse{Header: &pb.ResponseHeader{Revision: 7}, Succeeded: true}, nil
}

// requestTxnKV is a clientv3.KV that is also a RequestTxner, as the
// embedded etcd's in-process client is.
type requestTxnKV struct {
	clientv3.KV
	remote *recordingKV
}

func (kv requestTxnKV) TxnRequest(ctx context.Context, r *pb.TxnRequest) (*pb.TxnResponse, error) {
	return kv.remote.Txn(ctx, r)
}

// The request a create builds is, byte for byte, the one clientv3 sends for
// Txn(ctx).If(Compare(ModRevision(k), "=", 0)).Then(OpPut(k, data)), with
// WithLease when it is attached to a lease, and without the If when the
// precondition is off (the STORE-2 fault).
func TestCreateTxnIsClientv3s(t *testing.T) {
	for _, k := range []string{"/registry/configmaps/ns/a", "/r/" + strings.Repeat("k", 300)} {
		for _, data := range [][]byte{{}, []byte("k8s\x00stored"), bytes.Repeat([]byte{0xff, 1}, 4096)} {
			for _, lease := range []clientv3.LeaseID{clientv3.NoLease, 0x694d7b1f2a3c5e01} {
				for _, precondition := range []bool{true, false} {
					remote := &recordingKV{}
					txn := clientv3.NewKVFromKVClient(remote, nil).Txn(context.Background())
					if precondition {
						txn = txn.If(clientv3.Compare(clientv3.ModRevision(k), "=", 0))
					}
					var opts []clientv3.OpOption
					if lease != clientv3.NoLease {
						opts = append(opts, clientv3.WithLease(lease))
					}
					if _, err := txn.Then(clientv3.OpPut(k, string(data), opts...)).Commit(); err != nil {
						t.Fatal(err)
					}
					want, err := remote.last.Marshal()
					if err != nil {
						t.Fatal(err)
					}
					got, err := etcd3.NewCreateTxn(k, data, lease, precondition).Marshal()
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(got, want) {
						t.Errorf("key %q, %d bytes, lease %x, precondition %v: request\n%x\nclientv3's\n%x", k, len(data), lease, precondition, got, want)
					}
				}
			}
		}
	}
}

// A store whose client's KV takes requests builds the create's request in
// one allocation instead of clientv3's Op, Cmp and RequestOp wrappers and
// the copies of the key (twice) and the value.
func TestCreateThroughRequestTxnAllocatesLess(t *testing.T) {
	allocs := func(kv clientv3.KV, remote *recordingKV) float64 {
		client := clientv3.NewCtxClient(context.Background())
		client.KV = kv
		s, err := etcd3.New(etcd3.Config{Client: client, Resource: storagetest.ConfigMaps()})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}, Data: map[string]string{"k": "v"}}
		n := testing.AllocsPerRun(200, func() {
			if err := s.Create(context.Background(), "/configmaps/ns/a", cm, nil); err != nil {
				t.Fatal(err)
			}
		})
		if remote.last == nil || string(remote.last.Success[0].GetRequestPut().Key) != "/registry/configmaps/ns/a" {
			t.Fatalf("the create sent %v", remote.last)
		}
		return n
	}
	viaClientv3 := &recordingKV{}
	viaRequest := &recordingKV{}
	before := allocs(clientv3.NewKVFromKVClient(viaClientv3, nil), viaClientv3)
	after := allocs(requestTxnKV{KV: clientv3.NewKVFromKVClient(viaRequest, nil), remote: viaRequest}, viaRequest)
	t.Logf("allocations per create: %v through clientv3's Txn, %v through TxnRequest", before, after)
	if after > before-8 {
		t.Errorf("a create through TxnRequest allocates %v times, through clientv3's Txn %v: want at least 8 fewer", after, before)
	}
}

// The embedded etcd's in-process client takes requests, and answers them
// as its clientv3 Txn does: the write made, a request without a key
// refused with etcd's error.
func TestInProcessClientTakesCreateRequests(t *testing.T) {
	ctx := context.Background()
	kv, ok := etcd.InProcessClient().KV.(etcd3.RequestTxner)
	if !ok {
		t.Fatalf("the in-process client's KV %T is not a RequestTxner", etcd.InProcessClient().KV)
	}
	k := "/createtxn/" + t.Name()
	resp, err := kv.TxnRequest(ctx, etcd3.NewCreateTxn(k, []byte("first"), clientv3.NoLease, true))
	if err != nil || !resp.Succeeded {
		t.Fatalf("first create: %v, %v", resp, err)
	}
	again, err := kv.TxnRequest(ctx, etcd3.NewCreateTxn(k, []byte("second"), clientv3.NoLease, true))
	if err != nil || again.Succeeded {
		t.Fatalf("second create of the key: %v, %v; want not succeeded", again, err)
	}
	got, err := etcd.Client().Get(ctx, k)
	if err != nil || len(got.Kvs) != 1 || string(got.Kvs[0].Value) != "first" || got.Kvs[0].ModRevision != resp.Header.Revision {
		t.Fatalf("stored %v, %v; want \"first\" at %d", got, err, resp.Header.Revision)
	}

	_, viaClientv3 := etcd.InProcessClient().KV.Txn(ctx).Then(clientv3.OpPut("", "x")).Commit()
	_, viaRequest := kv.TxnRequest(ctx, etcd3.NewCreateTxn("", []byte("x"), clientv3.NoLease, false))
	if !errors.Is(viaClientv3, rpctypes.ErrEmptyKey) || !errors.Is(viaRequest, rpctypes.ErrEmptyKey) {
		t.Errorf("empty key: clientv3 %v, request %v; want %v from both", viaClientv3, viaRequest, rpctypes.ErrEmptyKey)
	}
}
