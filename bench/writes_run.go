package bench

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// WritesConfig configures the write-path workload.
type WritesConfig struct {
	// API is the API server to create through.
	API *rest.Config
	// Etcd, if not nil, is a gRPC client of the etcd the API server
	// stores in; raw Txn creates are measured on it for comparison
	// (target "etcd Txn").
	Etcd *clientv3.Client
	// EtcdInProcess, if not nil, is the same embedded etcd's in-process
	// client (the way an in-process API server reaches it); raw Txn creates
	// are measured through it too (target "etcd Txn (in-process)").
	EtcdInProcess *clientv3.Client
	// Clients are the concurrency levels (default 1, 16, 64, 256).
	Clients []int
	// Duration of each measurement (default 10 s).
	Duration time.Duration
	// ContentTypes the API clients speak (default protobuf and JSON).
	ContentTypes []string
	// EtcdPrefix is the API server's etcd key prefix (default
	// "/registry"), under which the API measurements' objects are deleted
	// after each of them when Etcd is set.
	EtcdPrefix string
	// NoHTTP2Client leaves out the writes workload's lean HTTP/2 client
	// (APICreatesHTTP2), which otherwise runs at each level right after
	// the first content type's client-go run.
	NoHTTP2Client bool
	// CPUProfile, if set, is a path prefix: each measurement writes the
	// process's CPU profile over its run to CPUProfile.<target>.c<clients>
	// (the target's name in lower case with runs of other characters as
	// one "-", e.g. PATH.apiserver-protobuf-http2.c64), so the API rows can
	// be read against the raw Txn rows of the same level.
	CPUProfile string
	// ServersElsewhere says API and Etcd are servers in other processes
	// (--kubeconfig), so the process CPU measured is the clients'; every
	// result says so (WriteResult.ClientCPUOnly).
	ServersElsewhere bool
	// Progress, if set, is called after each measurement.
	Progress func(WriteResult)
}

// RunWrites measures 1 KiB ConfigMap creates through the API server, and raw
// etcd Txn creates, at each concurrency level: raw Txn with clientv3, API
// creates with client-go in each content type and (unless cfg.NoHTTP2Client)
// API protobuf creates with the lean HTTP/2 client right after client-go's
// protobuf run.
// Objects go to a fresh namespace that is deleted afterwards; etcd keys go
// under a bench prefix outside /registry and are deleted too.
func RunWrites(ctx context.Context, cfg WritesConfig) ([]WriteResult, error) {
	var more []levelRun
	if !cfg.NoHTTP2Client {
		more = append(more, func(ctx context.Context, ns, prefix string, clients int, d time.Duration) (WriteResult, error) {
			return APICreatesHTTP2(ctx, cfg.API, ns, prefix+"-http2", clients, d)
		})
	}
	return runWriteLevels(ctx, cfg, "writes", "c", EtcdTxnCreates,
		func(ctx context.Context, ct, ns, prefix string, clients int, d time.Duration) (WriteResult, error) {
			return APICreates(ctx, cfg.API, ct, ns, prefix, clients, d)
		}, more...)
}

func (cfg WritesConfig) etcdPrefix() string {
	if cfg.EtcdPrefix == "" {
		return "/registry"
	}
	return strings.TrimSuffix(cfg.EtcdPrefix, "/")
}

// levelRun is one more API measurement runWriteLevels makes at each level,
// right after the first content type's: in namespace ns, names starting
// with prefix.
type levelRun func(ctx context.Context, ns, prefix string, clients int, d time.Duration) (WriteResult, error)

// runWriteLevels is the loop RunWrites and RunUpdates share: defaults, a
// fresh namespace bench-<kind>-<time> deleted afterwards, and at each
// concurrency level the raw etcd measurement (if cfg.Etcd is set; its keys
// deleted after it), the API measurement for each content type, with more
// right after the first content type's (each API measurement's objects
// deleted after it when cfg.Etcd is set).
func runWriteLevels(ctx context.Context, cfg WritesConfig, kind, namePrefix string,
	etcdRun func(ctx context.Context, client *clientv3.Client, keyPrefix string, clients int, d time.Duration) (WriteResult, error),
	apiRun func(ctx context.Context, contentType, namespace, prefix string, clients int, d time.Duration) (WriteResult, error),
	more ...levelRun,
) ([]WriteResult, error) {
	if len(cfg.Clients) == 0 {
		cfg.Clients = []int{1, 16, 64, 256}
	}
	if cfg.Duration == 0 {
		cfg.Duration = 10 * time.Second
	}
	if len(cfg.ContentTypes) == 0 {
		cfg.ContentTypes = []string{runtime.ContentTypeProtobuf, runtime.ContentTypeJSON}
	}
	cs, err := kubernetes.NewForConfig(cfg.API)
	if err != nil {
		return nil, fmt.Errorf("building client: %w", err)
	}
	ns := fmt.Sprintf("bench-%s-%d", kind, time.Now().UnixNano())
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("creating namespace %s: %w", ns, err)
	}
	defer func() {
		_ = cs.CoreV1().ConfigMaps(ns).DeleteCollection(context.WithoutCancel(ctx), metav1.DeleteOptions{}, metav1.ListOptions{})
		_ = cs.CoreV1().Namespaces().Delete(context.WithoutCancel(ctx), ns, metav1.DeleteOptions{})
	}()
	var results []WriteResult
	record := func(r WriteResult) {
		r.ClientCPUOnly = cfg.ServersElsewhere
		results = append(results, r)
		if cfg.Progress != nil {
			cfg.Progress(r)
		}
	}
	etcds := []struct {
		client *clientv3.Client
		suffix string // of the target name and key prefix
	}{{cfg.Etcd, ""}, {cfg.EtcdInProcess, " (in-process)"}}
	for i, clients := range cfg.Clients {
		for j, e := range etcds {
			if e.client == nil {
				continue
			}
			prefix := fmt.Sprintf("/kubeproof-bench/%s/%d-%d", ns, i, j)
			r, err := cfg.profile(e.suffix, func() (WriteResult, error) {
				return etcdRun(ctx, e.client, prefix, clients, cfg.Duration)
			})
			if cerr := dropEtcdKeys(context.WithoutCancel(ctx), e.client, prefix+"/"); cerr != nil && err == nil {
				err = cerr
			}
			if err != nil {
				return results, err
			}
			r.Target += e.suffix
			record(r)
		}
		// Each API measurement starts with no benchmark objects stored:
		// with the etcd client, the last one's objects are deleted in
		// etcd (the API server's watch sees them go) and etcd's history
		// compacted, as after the raw measurements. Otherwise later
		// measurements of a level would run against tens of thousands
		// more objects (a bigger watch cache, heap and etcd) than the
		// first.
		apiRuns := make([]levelRun, 0, len(cfg.ContentTypes)+len(more))
		for k, ct := range cfg.ContentTypes {
			apiRuns = append(apiRuns, func(ctx context.Context, ns, prefix string, clients int, d time.Duration) (WriteResult, error) {
				return apiRun(ctx, ct, ns, prefix+"-"+shortContentType(ct), clients, d)
			})
			if k == 0 {
				apiRuns = append(apiRuns, more...)
			}
		}
		for _, run := range apiRuns {
			r, err := cfg.profile("", func() (WriteResult, error) {
				return run(ctx, ns, fmt.Sprintf("%s%d", namePrefix, i), clients, cfg.Duration)
			})
			if err == nil && cfg.Etcd != nil {
				err = dropEtcdKeys(context.WithoutCancel(ctx), cfg.Etcd, cfg.etcdPrefix()+"/configmaps/"+ns+"/")
			}
			if err != nil {
				return results, err
			}
			record(r)
		}
		if ctx.Err() != nil {
			return results, ctx.Err()
		}
	}
	return results, nil
}

// dropEtcdKeys deletes a raw measurement's keys and compacts etcd's history
// up to the delete, so that the space they took is reused by the next
// measurement: without it, the raw in-process rows alone (over a million
// 1 KiB keys in a default run) fill etcd's 2 GiB backend quota and every
// later write fails with "mvcc: database space exceeded".
func dropEtcdKeys(ctx context.Context, client *clientv3.Client, prefix string) error {
	resp, err := client.Delete(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		return fmt.Errorf("cleaning up etcd keys: %w", err)
	}
	if _, err := client.Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		return fmt.Errorf("compacting etcd after cleaning up: %w", err)
	}
	return nil
}

// profile runs one measurement, writing the process's CPU profile over it
// to its file (cfg.CPUProfile; see writesProfilePath) when asked. suffix
// is what the caller appends to the result's target afterwards.
func (cfg WritesConfig) profile(suffix string, run func() (WriteResult, error)) (WriteResult, error) {
	if cfg.CPUProfile == "" {
		return run()
	}
	// The target's name is known once the run returns: profile to a
	// scratch file, then move it to its name.
	scratch := cfg.CPUProfile + ".running"
	stop, err := startCPUProfile(scratch)
	if err != nil {
		return WriteResult{}, fmt.Errorf("starting the writes CPU profile: %w", err)
	}
	r, err := run()
	if serr := stop(); serr != nil && err == nil {
		err = fmt.Errorf("writing the writes CPU profile: %w", serr)
	}
	if err != nil {
		_ = os.Remove(scratch)
		return r, err
	}
	if err := os.Rename(scratch, writesProfilePath(cfg.CPUProfile, r.Target+suffix, r.Clients)); err != nil {
		return r, fmt.Errorf("naming the writes CPU profile: %w", err)
	}
	return r, nil
}

// writesProfilePath is where a measurement's CPU profile goes:
// base.<target>.c<clients>, the target in lower case with every run of
// characters other than letters and digits as one "-".
func writesProfilePath(base, target string, clients int) string {
	var b strings.Builder
	dash := false
	for _, c := range strings.ToLower(target) {
		if ('a' <= c && c <= 'z') || ('0' <= c && c <= '9') {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(c)
			dash = false
			continue
		}
		dash = true
	}
	return fmt.Sprintf("%s.%s.c%d", base, b.String(), clients)
}
