package compact

import clientv3 "go.etcd.io/etcd/client/v3"

func clientvRev(rev int64) []clientv3.OpOption { return []clientv3.OpOption{clientv3.WithRev(rev)} }
