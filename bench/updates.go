package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// OpUpdate marks a WriteResult of compare-and-swap updates.
const OpUpdate = "update"

// EtcdTxnUpdates measures compare-and-swap updates straight on etcd, the
// way an API server updates an object: each client owns one key, writes it
// once, then repeatedly commits Txn If(ModRevision(key)==last) Then Put,
// remembering the revision of its own write. A failed compare (never
// expected: nobody else writes the key) counts as an error. Keys go under
// keyPrefix; the caller deletes them.
func EtcdTxnUpdates(ctx context.Context, client *clientv3.Client, keyPrefix string, clients int, d time.Duration) (WriteResult, error) {
	value, err := encodeProtobuf(&corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "bench", Namespace: "bench"},
		Data:       map[string]string{"payload": payload1KiB},
	})
	if err != nil {
		return WriteResult{}, err
	}
	keys := make([]string, clients)
	last := make([]int64, clients)
	for c := range keys {
		keys[c] = fmt.Sprintf("%s/%d", keyPrefix, c)
		resp, err := client.Put(ctx, keys[c], value)
		if err != nil {
			return WriteResult{}, fmt.Errorf("creating key %s: %w", keys[c], err)
		}
		last[c] = resp.Header.Revision
	}
	r := runClients(ctx, "etcd Txn CAS", clients, d, func(ctx context.Context, c, _ int) error {
		resp, err := client.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(keys[c]), "=", last[c])).
			Then(clientv3.OpPut(keys[c], value)).
			Else(clientv3.OpGet(keys[c])).
			Commit()
		if err != nil {
			return err
		}
		if !resp.Succeeded {
			// Someone else wrote the key: pick up its revision and
			// count the conflict.
			if kvs := resp.Responses[0].GetResponseRange().GetKvs(); len(kvs) == 1 {
				last[c] = kvs[0].ModRevision
			}
			return fmt.Errorf("key %s: modified since revision %d", keys[c], last[c])
		}
		last[c] = resp.Header.Revision
		return nil
	})
	r.Op = OpUpdate
	return r, nil
}

// APIUpdates measures compare-and-swap updates through the API server:
// each client creates its own 1 KiB ConfigMap, then repeatedly PUTs it with
// the resourceVersion its last write returned, changing one data key each
// time. A 409 Conflict (never expected: each client owns its object) counts
// as an error, after which the client re-reads the object.
func APIUpdates(ctx context.Context, cfg WritesConfig, contentType, namespace, prefix string, clients int, d time.Duration) (WriteResult, error) {
	cs, err := kubernetes.NewForConfig(APIClientConfig(cfg.API, contentType))
	if err != nil {
		return WriteResult{}, fmt.Errorf("building client: %w", err)
	}
	objs := make([]*corev1.ConfigMap, clients)
	for c := range objs {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", prefix, c)},
			Data:       map[string]string{"payload": payload1KiB, "seq": "0"},
		}
		if objs[c], err = cs.CoreV1().ConfigMaps(namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			return WriteResult{}, fmt.Errorf("creating configmap %s: %w", cm.Name, err)
		}
	}
	target := "apiserver update (" + shortContentType(contentType) + ")"
	r := runClients(ctx, target, clients, d, func(ctx context.Context, c, seq int) error {
		cm := objs[c]
		cm.Data["seq"] = strconv.Itoa(seq + 1)
		updated, err := cs.CoreV1().ConfigMaps(namespace).Update(ctx, cm, metav1.UpdateOptions{})
		if err != nil {
			if latest, gerr := cs.CoreV1().ConfigMaps(namespace).Get(ctx, cm.Name, metav1.GetOptions{}); gerr == nil {
				objs[c] = latest
			}
			return err
		}
		objs[c] = updated
		return nil
	})
	r.Op = OpUpdate
	return r, nil
}

// RunUpdates measures compare-and-swap updates of 1 KiB ConfigMaps through
// the API server (each content type) and, if cfg.Etcd is set, raw etcd Txn
// CAS updates, at each concurrency level of cfg (defaults as RunWrites).
// Objects go to a fresh namespace deleted afterwards; etcd keys go under a
// bench prefix outside /registry and are deleted too.
func RunUpdates(ctx context.Context, cfg WritesConfig) ([]WriteResult, error) {
	return runWriteLevels(ctx, cfg, "updates", "u", EtcdTxnUpdates,
		func(ctx context.Context, ct, ns, prefix string, clients int, d time.Duration) (WriteResult, error) {
			return APIUpdates(ctx, cfg, ct, ns, prefix, clients, d)
		})
}

// WriteUpdatesTable prints update results as a Markdown table.
func WriteUpdatesTable(w io.Writer, m Machine, results []WriteResult) {
	writeOpsTable(w, m, "updates/s", results)
}

// WritesClientsChart draws each target's operations/s against concurrent
// clients (log scale; the median over runs at each level) for the results
// whose Op is op ("" for creates, OpUpdate for CAS updates).
func WritesClientsChart(file, title, yLabel, op string, results []WriteResult) NamedChart {
	c := LineChart{Title: title, XLabel: "clients (log scale)", YLabel: yLabel, YMin0: true}
	var targets []string
	rates := map[string]map[int][]float64{}
	var levels []int
	for _, w := range results {
		if w.Op != op {
			continue
		}
		if rates[w.Target] == nil {
			rates[w.Target] = map[int][]float64{}
			targets = append(targets, w.Target)
		}
		if !slices.Contains(levels, w.Clients) {
			levels = append(levels, w.Clients)
		}
		rates[w.Target][w.Clients] = append(rates[w.Target][w.Clients], w.Rate)
	}
	slices.Sort(levels)
	for _, t := range targets {
		ser := Series{Name: t}
		for _, n := range levels {
			if v, ok := rates[t][n]; ok {
				ser.Points = append(ser.Points, Point{X: math.Log2(float64(n)), Y: Metric{Values: v}.Spread().Median})
			}
		}
		c.Series = append(c.Series, ser)
	}
	for _, n := range levels {
		c.XTicks = append(c.XTicks, Tick{Value: math.Log2(float64(n)), Label: strconv.Itoa(n)})
	}
	return NamedChart{File: file, Chart: c}
}

// writesCharts draws the write results: creates/s and, if any, CAS
// updates/s against clients.
func writesCharts(results []WriteResult) []NamedChart {
	var out []NamedChart
	if slices.ContainsFunc(results, func(w WriteResult) bool { return w.Op == "" }) {
		out = append(out, WritesClientsChart("writes-clients", "Creates/s against concurrent clients (median of runs)", "creates/s", "", results))
	}
	if slices.ContainsFunc(results, func(w WriteResult) bool { return w.Op == OpUpdate }) {
		out = append(out, WritesClientsChart("updates-clients", "CAS updates/s against concurrent clients (median of runs)", "updates/s", OpUpdate, results))
	}
	return out
}
