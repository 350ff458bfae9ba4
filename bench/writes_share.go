package bench

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// WriteShare is one API create measurement as a share of the raw etcd Txn
// creates measured at the same concurrency level (issue 2's target: at 64
// clients, API creates at least 60% of raw etcd Txn creates on the same
// etcd).
type WriteShare struct {
	Clients int
	// Target and Client are the API measurement's (e.g. "apiserver
	// (protobuf)" with "client-go").
	Target, Client string
	// Rate and RawRate are creates/s through the API server and raw Txn
	// creates/s over gRPC (clientv3); RateShare is Rate/RawRate.
	Rate, RawRate, RateShare float64
	// CPUPerOp and RawCPUPerOp are the process CPU per create of each;
	// CPUShare is RawCPUPerOp/CPUPerOp (0 when either is not measured, or
	// is the clients' CPU alone: WriteResult.ClientCPUOnly).
	// With client, API server and etcd in one process on a busy machine
	// it is the steadier of the two shares.
	CPUPerOp, RawCPUPerOp time.Duration
	CPUShare              float64
}

// rawTxnTarget is the raw measurement API creates are compared to: Txn
// creates over gRPC on loopback, as any etcd client (and the API server
// with --etcd-servers) reaches etcd.
const rawTxnTarget = "etcd Txn"

// WriteShares pairs each API create result with the raw etcd Txn result
// of the same concurrency level and run; results without a raw partner
// are left out. A run's results are recognized by their order: a raw
// result starts the level, as RunWrites records them.
func WriteShares(results []WriteResult) []WriteShare {
	var out []WriteShare
	var raw *WriteResult
	for i := range results {
		r := &results[i]
		if r.Op != "" && r.Op != "create" {
			continue
		}
		switch {
		case r.Target == rawTxnTarget:
			raw = r
		case strings.HasPrefix(r.Target, "apiserver") && raw != nil && raw.Clients == r.Clients && raw.Rate > 0:
			s := WriteShare{
				Clients: r.Clients, Target: r.Target, Client: r.Client,
				Rate: r.Rate, RawRate: raw.Rate, RateShare: r.Rate / raw.Rate,
				CPUPerOp: r.ProcessCPUPerOp, RawCPUPerOp: raw.ProcessCPUPerOp,
			}
			if s.Client == "" {
				s.Client = clientGo // results from before WriteResult.Client
			}
			if s.CPUPerOp > 0 && s.RawCPUPerOp > 0 && !r.ClientCPUOnly && !raw.ClientCPUOnly {
				s.CPUShare = float64(s.RawCPUPerOp) / float64(s.CPUPerOp)
			}
			out = append(out, s)
		}
	}
	return out
}

// WriteShareTable prints WriteShares(results) as a Markdown table; nothing
// if there is no pair.
func WriteShareTable(w io.Writer, results []WriteResult) {
	shares := WriteShares(results)
	if len(shares) == 0 {
		return
	}
	fmt.Fprintln(w, "\nShare of raw etcd Txn creates (clientv3 over gRPC, same etcd, same level; issue 2's target: ≥ 60% at 64 clients):")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| clients | API target | API client | creates/s | raw Txn/s | share | process CPU/create, API / raw | share by CPU |")
	fmt.Fprintln(w, "|---:|---|---|---:|---:|---:|---:|---:|")
	clientCPUOnly := false
	for _, r := range results {
		clientCPUOnly = clientCPUOnly || r.ClientCPUOnly
	}
	for _, s := range shares {
		cpuShare := "—"
		if s.CPUShare > 0 {
			cpuShare = fmt.Sprintf("%.2f", s.CPUShare)
		}
		fmt.Fprintf(w, "| %d | %s | %s | %.0f | %.0f | %.0f%% | %s / %s | %s |\n", s.Clients, s.Target, s.Client,
			s.Rate, s.RawRate, 100*s.RateShare, us(s.CPUPerOp), us(s.RawCPUPerOp), cpuShare)
	}
	if clientCPUOnly {
		fmt.Fprintln(w, "\nThe API server and etcd ran in other processes (--kubeconfig): process CPU is the benchmark clients' alone, so there is no share by CPU.")
	}
}
