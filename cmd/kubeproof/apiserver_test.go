package main

import (
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kubeproof/kubeproof/impl/cluster"
	"github.com/kubeproof/kubeproof/impl/storage"
)

// TestEnablePriorityAndFairnessFlag: on by default, as kube-apiserver's;
// =false (and only that) keeps the legacy limits.
func TestEnablePriorityAndFairnessFlag(t *testing.T) {
	for _, tc := range []struct {
		args         []string
		wantDisabled bool
	}{
		{nil, false},
		{[]string{"--enable-priority-and-fairness"}, false},
		{[]string{"--enable-priority-and-fairness=true"}, false},
		{[]string{"--enable-priority-and-fairness=false"}, true},
	} {
		var o cluster.AuthOptions
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		addAuthFlags(fs, &o, cluster.DefaultAuthorizationModes, nil, nil)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if o.DisablePriorityAndFairness != tc.wantDisabled {
			t.Errorf("%v: disabled %v, want %v", tc.args, o.DisablePriorityAndFairness, tc.wantDisabled)
		}
	}
	var o cluster.AuthOptions
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	addAuthFlags(fs, &o, cluster.DefaultAuthorizationModes, nil, nil)
	if err := fs.Parse([]string{"--enable-priority-and-fairness=maybe"}); err == nil {
		t.Error("a value that is not a boolean was accepted")
	}
}

// --event-ttl: kube-apiserver's default of an hour; 0 keeps events until
// deleted, which cluster's configuration says with a negative TTL (its 0
// is the default).
func TestEventTTLFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want time.Duration
	}{
		{nil, time.Hour},
		{[]string{"--event-ttl=30m"}, 30 * time.Minute},
		{[]string{"--event-ttl=0"}, -1},
	} {
		var ttl time.Duration
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		addEventTTLFlag(fs, &ttl)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if got := eventTTLFlag(ttl); got != tc.want {
			t.Errorf("%v: cluster EventTTL %s, want %s", tc.args, got, tc.want)
		}
	}
}

// --etcd-count-metric-poll-period (of `kubeproof apiserver` and `kubeproof
// up`): kube-apiserver's default of a minute; 0 disables counting, which
// cluster's configuration says with a negative period (its 0 is the
// default).
func TestCountPollFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want time.Duration
	}{
		{nil, time.Minute},
		{[]string{"--etcd-count-metric-poll-period=5s"}, 5 * time.Second},
		{[]string{"--etcd-count-metric-poll-period=0"}, -1},
	} {
		var p time.Duration
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		addCountPollFlag(fs, &p)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if got := countPollFlag(p); got != tc.want {
			t.Errorf("%v: cluster EtcdCountMetricPollPeriod %s, want %s", tc.args, got, tc.want)
		}
	}
}

// --etcd-compaction-interval (of `kubeproof apiserver` and `kubeproof up`):
// kube-apiserver's default of five minutes; 0 disables compaction, which
// cluster's configuration says with a negative interval (its 0 is the
// default). Before, both commands passed 0 on as it was, so "0 disables"
// compacted every five minutes, and `up` documented a negative value instead.
func TestCompactionIntervalFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want time.Duration
	}{
		{nil, 5 * time.Minute},
		{[]string{"--etcd-compaction-interval=1m"}, time.Minute},
		{[]string{"--etcd-compaction-interval=0"}, -1},
		{[]string{"--etcd-compaction-interval=-1s"}, -1},
	} {
		for _, cmd := range []*cobra.Command{newAPIServerCommand(), newUpCommand()} {
			if err := cmd.ParseFlags(tc.args); err != nil {
				t.Fatalf("%s %v: %v", cmd.Name(), tc.args, err)
			}
			p, err := cmd.Flags().GetDuration("etcd-compaction-interval")
			if err != nil {
				t.Fatal(err)
			}
			if got := compactionFlag(p); got != tc.want {
				t.Errorf("%s %v: cluster CompactionInterval %s, want %s", cmd.Name(), tc.args, got, tc.want)
			}
		}
	}
}

// --enable-aggregator-routing: off by default, as kube-apiserver's (webhooks
// addressed by service go to its ClusterIP); both `kubeproof apiserver` and
// `kubeproof up` take it (addAuthFlags).
func TestEnableAggregatorRoutingFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{nil, false},
		{[]string{"--enable-aggregator-routing"}, true},
		{[]string{"--enable-aggregator-routing=false"}, false},
	} {
		var o cluster.AuthOptions
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		addAuthFlags(fs, &o, cluster.DefaultAuthorizationModes, nil, nil)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if o.EnableAggregatorRouting != tc.want {
			t.Errorf("%v: EnableAggregatorRouting %v, want %v", tc.args, o.EnableAggregatorRouting, tc.want)
		}
	}
}

// TestEtcdPrefixFlag: --etcd-prefix is rooted as kube-apiserver's storage
// roots it, and an explicit empty value, which kube-apiserver neither
// refuses nor defaults, keeps objects straight under the root ("/"), not
// under the default /registry.
func TestEtcdPrefixFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // the prefix of the stored keys
	}{
		{nil, "/registry/"},
		{[]string{"--etcd-prefix="}, "/"},
		{[]string{"--etcd-prefix=/"}, "/"},
		{[]string{"--etcd-prefix=foo"}, "/foo/"},
		{[]string{"--etcd-prefix=/foo/"}, "/foo/"},
	} {
		var p string
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		addEtcdPrefixFlag(fs, &p)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if got := storage.NormalizePrefix(etcdPrefixFlag(p)) + "/"; got != tc.want {
			t.Errorf("%v: keys under %q, want %q", tc.args, got, tc.want)
		}
	}
}
