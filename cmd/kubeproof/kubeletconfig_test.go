package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeproof/kubeproof/impl/cluster"
)

const kcHeader = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"

// writeKubeletConfig writes a config file in a new directory.
func writeKubeletConfig(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// applyConfigFile parses args as `kubeproof kubelet`'s and applies the
// file at path; it returns the flag set, the file's flags and the logs.
func applyConfigFile(t *testing.T, path string, args ...string) (*kubeletFlags, error) {
	t.Helper()
	cmd := newKubeletCommand()
	if err := cmd.Flags().Parse(args); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	fromFile, err := useKubeletConfigFile(cmd.Flags(), path, "", slog.New(slog.NewTextHandler(&logs, nil)))
	return &kubeletFlags{flags: cmd.Flags(), get: flagGetter(cmd.Flags()), fromFile: fromFile, logs: logs.String()}, err
}

// flagGetter is the value of a flag of fs by name.
func flagGetter(fs *pflag.FlagSet) func(string) string {
	return func(name string) string {
		if fl := fs.Lookup(name); fl != nil {
			return fl.Value.String()
		}
		return "<no flag --" + name + ">"
	}
}

type kubeletFlags struct {
	flags    *pflag.FlagSet
	get      func(string) string
	fromFile map[string]bool
	logs     string
}

// TestKubeletConfigFilePrecedence: the fields of a KubeletConfiguration
// file become its flags' values; a flag given on the command line beats
// the file (feature gates: the command line's gates over the file's, as
// upstream's kubeletConfigFlagPrecedence); a field the file leaves out
// is upstream's v1beta1 default, where that is not the flag's; relative
// paths are the file's directory's.
func TestKubeletConfigFilePrecedence(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		args       []string
		want       map[string]string
	}{
		{name: "file beats flag default", body: "maxPods: 50\nsyncFrequency: 30s\nclusterDNS: [10.96.0.10, 10.96.0.11]\nclusterDomain: cluster.local\ncgroupRoot: /kp\n",
			want: map[string]string{"max-pods": "50", "sync-frequency": "30s", "cluster-dns": "[10.96.0.10,10.96.0.11]", "cluster-domain": "cluster.local", "cgroup-root": "/kp"}},
		{name: "command line beats file", body: "maxPods: 50\nsyncFrequency: 30s\nclusterDNS: [10.96.0.10]\n",
			args: []string{"--max-pods", "20", "--cluster-dns", "10.0.0.1"},
			want: map[string]string{"max-pods": "20", "sync-frequency": "30s", "cluster-dns": "[10.0.0.1]"}},
		{name: "v1beta1 defaults", body: "",
			want: map[string]string{"sync-frequency": "1m0s", "authorization-mode": "Webhook", "anonymous-auth": "false", "authentication-token-webhook": "true",
				"max-pods": "110", "port": "10250", "eviction-hard": "imagefs.available<15%,imagefs.inodesFree<5%,memory.available<100Mi,nodefs.available<10%,nodefs.inodesFree<5%"}},
		{name: "command line beats v1beta1 default", body: "", args: []string{"--anonymous-auth=true", "--authorization-mode", "AlwaysAllow"},
			want: map[string]string{"anonymous-auth": "true", "authorization-mode": "AlwaysAllow"}},
		{name: "maps", body: "evictionHard: {memory.available: 200Mi}\nevictionSoft: {memory.available: 300Mi}\nevictionSoftGracePeriod: {memory.available: 1m}\nsystemReserved: {cpu: 100m, memory: 1Gi}\n",
			want: map[string]string{"eviction-hard": "memory.available<200Mi", "eviction-soft": "memory.available<300Mi", "eviction-soft-grace-period": "memory.available=1m", "system-reserved": "cpu=100m,memory=1Gi"}},
		{name: "no hard eviction", body: "evictionHard: {}\n", want: map[string]string{"eviction-hard": ""}},
		{name: "empty hard eviction merged", body: "evictionHard: {}\nmergeDefaultEvictionSettings: true\n",
			want: map[string]string{"eviction-hard": "imagefs.available<15%,imagefs.inodesFree<5%,memory.available<100Mi,nodefs.available<10%,nodefs.inodesFree<5%"}},
		{name: "log format", body: "logging: {format: json}\n", want: map[string]string{"log-format": "json"}},
		{name: "merged eviction defaults", body: "evictionHard: {memory.available: 200Mi}\nmergeDefaultEvictionSettings: true\n",
			want: map[string]string{"eviction-hard": "imagefs.available<15%,imagefs.inodesFree<5%,memory.available<200Mi,nodefs.available<10%,nodefs.inodesFree<5%"}},
		{name: "feature gates merge", body: "featureGates: {CustomCPUCFSQuotaPeriod: true}\n",
			want: map[string]string{"feature-gates": "CustomCPUCFSQuotaPeriod=true"}},
		{name: "feature gates command line wins", body: "featureGates: {CustomCPUCFSQuotaPeriod: true}\n", args: []string{"--feature-gates", "CustomCPUCFSQuotaPeriod=false"},
			want: map[string]string{"feature-gates": "CustomCPUCFSQuotaPeriod=false"}},
		{name: "feature gates merged by name", body: "featureGates: {AllowDNSOnlyNodeCSR: true}\n", args: []string{"--feature-gates", "CustomCPUCFSQuotaPeriod=true"},
			want: map[string]string{"feature-gates": "AllowDNSOnlyNodeCSR=true,CustomCPUCFSQuotaPeriod=true"}},
		{name: "feature gates command line names none", body: "featureGates: {CustomCPUCFSQuotaPeriod: true}\n", args: []string{"--feature-gates="},
			want: map[string]string{"feature-gates": "CustomCPUCFSQuotaPeriod=true"}},
		{name: "alias given", body: "containerRuntimeEndpoint: unix:///run/crio/crio.sock\n", args: []string{"--cri-endpoint", "unix:///x.sock"},
			want: map[string]string{"container-runtime-endpoint": "unix:///x.sock"}},
		{name: "enableServer false", body: "enableServer: false\nport: 10999\n", want: map[string]string{"enable-server": "false", "port": "10999"}},
		{name: "no enforcement", body: "enforceNodeAllocatable: []\n", want: map[string]string{"enforce-node-allocatable": "[]"}},
		{name: "status report follows update", body: "nodeStatusUpdateFrequency: 20s\nnodeLeaseDurationSeconds: 60\n",
			want: map[string]string{"node-status-update-frequency": "20s", "node-status-report-frequency": "20s", "node-lease-duration": "1m0s"}},
		{name: "pointers", body: "singleProcessOOMKill: true\nfailSwapOn: false\ncpuCFSQuota: false\nseccompDefault: true\nkubeAPIQPS: 0\npodPidsLimit: -5\n",
			want: map[string]string{"single-process-oom-kill": "true", "fail-swap-on": "false", "cpu-cfs-quota": "false", "seccomp-default": "true", "kube-api-qps": "0", "pod-max-pids": "-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeKubeletConfig(t, kcHeader+tc.body)
			f, err := applyConfigFile(t, path, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			for flag, want := range tc.want {
				if got := f.get(flag); got != want {
					t.Errorf("--%s = %q, want %q", flag, got, want)
				}
			}
		})
	}

	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(path, []byte(kcHeader+"tlsCertFile: pki/kubelet.crt\ntlsPrivateKeyFile: /abs/kubelet.key\nauthentication: {x509: {clientCAFile: ca.crt}}\nresolvConf: resolv.conf\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := applyConfigFile(t, path)
	if err != nil {
		t.Fatal(err)
	}
	for flag, want := range map[string]string{"tls-cert-file": filepath.Join(dir, "pki/kubelet.crt"), "tls-private-key-file": "/abs/kubelet.key",
		"client-ca-file": filepath.Join(dir, "ca.crt"), "resolv-conf": filepath.Join(dir, "resolv.conf")} {
		if got := f.get(flag); got != want {
			t.Errorf("--%s = %q, want %q (relative to the file's directory)", flag, got, want)
		}
	}
	// What the file set counts as given (eviction-hard's default replaced,
	// single-process-oom-kill set); what it left out does not.
	f, err = applyConfigFile(t, writeKubeletConfig(t, kcHeader+"evictionHard: {memory.available: 1Mi}\nsingleProcessOOMKill: true\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !f.fromFile["eviction-hard"] || !f.fromFile["single-process-oom-kill"] || f.fromFile["cpu-cfs-quota-period"] {
		t.Errorf("flags set by the file: %v", f.fromFile)
	}
}

// TestKubeletConfigFileDecoding: a file that cannot be read or decoded is
// upstream's error; an unknown or duplicate field is decoded leniently
// with upstream's warning.
func TestKubeletConfigFileDecoding(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope.yaml")
	_, err := applyConfigFile(t, missing)
	if want := `failed to load kubelet config file, path: ` + missing + `, error: failed to load Kubelet config file ` + missing + `, error failed to read kubelet config file "` + missing + `", error: open ` + missing + `: no such file or directory`; err == nil || err.Error() != want {
		t.Errorf("missing file: %v\nwant %s", err, want)
	}
	for _, tc := range []struct {
		name, body, want string
	}{
		{name: "empty", body: "", want: `was empty`},
		{name: "wrong type", body: kcHeader + "maxPods: \"110\"\n", want: "failed to decode: "},
		{name: "no kind", body: "apiVersion: kubelet.config.k8s.io/v1beta1\nmaxPods: 3\n", want: "failed to decode: Object 'Kind' is missing"},
		{name: "unknown version", body: "apiVersion: kubelet.config.k8s.io/v1\nkind: KubeletConfiguration\n", want: `failed to decode: no kind "KubeletConfiguration" is registered for version "kubelet.config.k8s.io/v1"`},
		{name: "not YAML", body: kcHeader + "maxPods: [\n", want: "failed to decode: "},
	} {
		path := writeKubeletConfig(t, tc.body)
		_, err := applyConfigFile(t, path)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "failed to load kubelet config file, path: "+path) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	for _, tc := range []struct {
		name, body, warning string
	}{
		{name: "unknown field", body: kcHeader + "maxPods: 9\nmaxPodz: 3\n", warning: `unknown field \"maxPodz\"`},
		{name: "duplicate field", body: kcHeader + "maxPods: 8\nmaxPods: 9\n", warning: `key \"maxPods\" already set in map`},
	} {
		f, err := applyConfigFile(t, writeKubeletConfig(t, tc.body))
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if !strings.Contains(f.logs, "using lenient decoding as strict decoding failed") || !strings.Contains(f.logs, tc.warning) {
			t.Errorf("%s: logs %q, want the lenient decoding warning with %s", tc.name, f.logs, tc.warning)
		}
		if f.get("max-pods") != "9" {
			t.Errorf("%s: --max-pods %s, want 9", tc.name, f.get("max-pods"))
		}
	}
}

// TestKubeletConfigFileValidation: the file's values are validated with
// upstream's messages (several errors as one aggregate); a field whose
// flag is given on the command line is not the file's.
func TestKubeletConfigFileValidation(t *testing.T) {
	for _, tc := range []struct {
		body string
		args []string
		want string
	}{
		{body: "maxPods: -1\n", want: "failed to validate kubelet configuration, error: invalid configuration: maxPods (--max-pods) -1 must not be a negative number, path: "},
		{body: "imageGCHighThresholdPercent: 50\nimageGCLowThresholdPercent: 60\nport: 70000\n",
			want: "failed to validate kubelet configuration, error: [invalid configuration: imageGCLowThresholdPercent (--image-gc-low-threshold) 60 must be less than imageGCHighThresholdPercent (--image-gc-high-threshold) 50, invalid configuration: port (--port) 70000 must be between 1 and 65535, inclusive], path: "},
		{body: "memorySwap: {swapBehavior: UnlimitedSwap}\n", want: `invalid configuration: memorySwap.swapBehavior "UnlimitedSwap" must be one of: "", "LimitedSwap" or "NoSwap"`},
		{body: "imageMaximumGCAge: 1m\n", want: "invalid configuration: imageMaximumGCAge 1m0s must be greater than imageMinimumGCAge 2m0s"},
		{body: "enforceNodeAllocatable: [pods, kube-reserved, kube-reserved-compressible]\n",
			want: `invalid configuration: both "kube-reserved" and "kube-reserved-compressible" cannot be specified together in enforceNodeAllocatable (--enforce-node-allocatable)`},
		{body: "runOnce: true\n", want: "invalid configuration: runOnce (--runOnce) true, Runonce mode has been deprecated and should not be set"},
		{body: "maxPods: -1\n", args: []string{"--max-pods", "5"}},
		{body: "enableDebuggingHandlers: false\n", want: "less secure than configured: enableDebuggingHandlers=false"},
		{body: "enableDebuggingHandlers: true\n"},
		{body: "tlsMinVersion: VersionTLS13\ncgroupDriver: systemd\n", want: "kubelet configuration fields not implemented by kubeproof, which would leave the kubelet less secure than configured: tlsMinVersion=\"VersionTLS13\""},
	} {
		_, err := applyConfigFile(t, writeKubeletConfig(t, kcHeader+tc.body), tc.args...)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%q %q: %v", tc.body, tc.args, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v\nwant %s", tc.body, err, tc.want)
		}
	}
}

// TestIgnoredKubeletConfigFields: what a kubeadm-written file sets that
// kubeproof does not implement is named in a warning, field by field;
// fields at upstream's default (or zero, which defaulting replaces) and
// implemented ones are not.
func TestIgnoredKubeletConfigFields(t *testing.T) {
	body := kcHeader + `authentication:
  anonymous: {enabled: false}
  webhook: {cacheTTL: 0s, enabled: true}
  x509: {clientCAFile: /etc/kubernetes/pki/ca.crt}
authorization:
  mode: Webhook
  webhook: {cacheAuthorizedTTL: 0s, cacheUnauthorizedTTL: 0s}
cgroupDriver: systemd
clusterDNS: [10.96.0.10]
clusterDomain: cluster.local
containerRuntimeEndpint: ""
cpuManagerReconcilePeriod: 0s
evictionPressureTransitionPeriod: 0s
fileCheckFrequency: 0s
healthzBindAddress: 127.0.0.1
healthzPort: 10248
httpCheckFrequency: 0s
imageMaximumGCAge: 0s
imageMinimumGCAge: 0s
logging: {flushFrequency: 0, options: {json: {infoBufferSize: "0"}, text: {infoBufferSize: "0"}}, verbosity: 0}
memorySwap: {}
nodeStatusReportFrequency: 0s
nodeStatusUpdateFrequency: 0s
rotateCertificates: true
runtimeRequestTimeout: 0s
shutdownGracePeriod: 0s
shutdownGracePeriodCriticalPods: 0s
staticPodPath: /etc/kubernetes/manifests
streamingConnectionIdleTimeout: 0s
syncFrequency: 0s
volumeStatsAggPeriod: 0s
readOnlyPort: 10255
qosReserved: {memory: 50%}
`
	f, err := applyConfigFile(t, writeKubeletConfig(t, body))
	if err != nil {
		t.Fatal(err)
	}
	var fields []string
	for line := range strings.SplitSeq(strings.TrimSpace(f.logs), "\n") {
		if strings.Contains(line, "not implemented by kubeproof") {
			_, after, _ := strings.Cut(line, "field=")
			fields = append(fields, strings.Fields(after)[0])
		}
	}
	want := []string{"cgroupDriver", "qosReserved.memory", "readOnlyPort", "staticPodPath"}
	if !slices.Equal(fields, want) {
		t.Errorf("warned of %q, want %q; logs:\n%s", fields, want, f.logs)
	}
	if !strings.Contains(f.logs, `unknown field \"containerRuntimeEndpint\"`) {
		t.Errorf("no lenient decoding warning for the misspelt field: %s", f.logs)
	}
}

// TestKubeletStartsWithConfigFile: `kubeproof kubelet --config FILE`
// registers a node as the file configures it (maxPods 7 its pods
// capacity; the API off with enableServer: false, so no port is bound;
// an ignored field only warned of); a bad file stops it with upstream's error before it
// contacts the API server.
func TestKubeletStartsWithConfigFile(t *testing.T) {
	if err := runKubelet(unreachableKubeconfig(t), "--config", writeKubeletConfig(t, kcHeader+"maxPods: -3\n")); err == nil ||
		!strings.Contains(err.Error(), "failed to validate kubelet configuration, error: invalid configuration: maxPods (--max-pods) -3 must not be a negative number") {
		t.Errorf("kubelet with maxPods -3: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	c, err := cluster.Start(ctx, cluster.Config{DataDir: dir, BindAddress: "127.0.0.1:0", WatchCache: true, UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	}()
	config := writeKubeletConfig(t, kcHeader+"enableServer: false\nmaxPods: 7\npodLogsDir: logs\nnodeStatusUpdateFrequency: 1h\ncgroupDriver: systemd\n")
	kctx, kcancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		root := newRootCommand()
		root.SetArgs([]string{"kubelet", "--kubeconfig", c.AdminKubeconfig, "--node-name", "filed", "--config", config,
			"--node-status-update-frequency", "10s", "--root-dir", filepath.Join(dir, "filed")})
		root.SetOut(new(discard))
		root.SetErr(new(discard))
		done <- root.ExecuteContext(kctx)
	}()
	client, err := kubernetes.NewForConfig(c.AdminConfig)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		node, err := client.CoreV1().Nodes().Get(ctx, "filed", metav1.GetOptions{})
		if err == nil {
			if pods := node.Status.Capacity.Pods(); pods.Value() != 7 {
				t.Errorf("node pods capacity %s, want 7 (the file's maxPods)", pods)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node filed not registered: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	kcancel()
	if err := <-done; err != nil {
		t.Errorf("kubelet: %v", err)
	}
}

// TestKubeletConfigDropIns: --config-dir's *.conf files (lexical order,
// a subdirectory's after the names before it) are merged over --config,
// each setting only its own fields; the command line still wins; without
// --config they go over the flags' configuration (its defaults, not
// v1beta1's); a drop-in that is not a KubeletConfiguration is upstream's
// error.
func TestKubeletConfigDropIns(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("10-a.conf", kcHeader+"maxPods: 60\nclusterDomain: a.local\n")
	write("20-b.conf", kcHeader+"maxPods: 70\ncgroupRoot: /b\n")
	write("sub/05-c.conf", kcHeader+"maxPods: 80\n")
	write("notes.txt", "not a configuration")
	config := writeKubeletConfig(t, kcHeader+"maxPods: 50\nclusterDomain: base.local\npodCIDR: 10.1.0.0/24\n")
	run := func(config string, args ...string) (func(string) string, error) {
		cmd := newKubeletCommand()
		if err := cmd.Flags().Parse(args); err != nil {
			t.Fatal(err)
		}
		_, err := useKubeletConfigFile(cmd.Flags(), config, dir, slog.New(slog.NewTextHandler(new(bytes.Buffer), nil)))
		return func(name string) string { return cmd.Flags().Lookup(name).Value.String() }, err
	}
	get, err := run(config, "--cgroup-root", "/cmd")
	if err != nil {
		t.Fatal(err)
	}
	for flag, want := range map[string]string{"max-pods": "80", "cluster-domain": "a.local", "pod-cidr": "10.1.0.0/24", "cgroup-root": "/cmd", "authorization-mode": "Webhook"} {
		if got := get(flag); got != want {
			t.Errorf("--%s = %q, want %q", flag, got, want)
		}
	}
	get, err = run("")
	if err != nil {
		t.Fatal(err)
	}
	for flag, want := range map[string]string{"max-pods": "80", "authorization-mode": "AlwaysAllow", "anonymous-auth": "true", "sync-frequency": "20s"} {
		if got := get(flag); got != want {
			t.Errorf("without --config: --%s = %q, want %q", flag, got, want)
		}
	}
	write("30-bad.conf", "maxPods: 3\n")
	bad := filepath.Join(dir, "30-bad.conf")
	_, err = run(config)
	if want := `failed to merge kubelet configs: failed to walk through kubelet dropin directory "` + dir + `": failed to load kubelet dropin file, path: ` + bad + `, error: Object 'Kind' is missing in 'maxPods: 3` + "\n'"; err == nil || err.Error() != want {
		t.Errorf("drop-in without kind: %v\nwant %s", err, want)
	}
}

// TestKubeletConfigDropInsOverLoadedFile: drop-ins go over --config as
// upstream's kubelet merges them, over the loaded configuration written
// as v1beta1 JSON: its evictionHard already upstream's defaults when the
// file leaves it out (loadConfigFile), so a drop-in's signal is merged
// into them; a null in a drop-in removes the field, whoever set it, and
// the merged result is defaulted again, so a null or a zero is v1beta1's
// default (an evictionHard taken away is none).
func TestKubeletConfigDropInsOverLoadedFile(t *testing.T) {
	for _, tc := range []struct {
		name, config string
		dropIns      []string
		want         map[string]string
	}{
		{name: "signal merged into the defaults", config: "maxPods: 50\n", dropIns: []string{"evictionHard: {memory.available: 200Mi}\n"},
			want: map[string]string{"eviction-hard": "imagefs.available<15%,imagefs.inodesFree<5%,memory.available<200Mi,nodefs.available<10%,nodefs.inodesFree<5%"}},
		{name: "signal merged into the file's", config: "evictionHard: {memory.available: 300Mi}\n", dropIns: []string{"evictionHard: {nodefs.available: 20%}\n"},
			want: map[string]string{"eviction-hard": "memory.available<300Mi,nodefs.available<20%"}},
		{name: "null removes the file's", config: "maxPods: 50\nclusterDomain: base.local\nsyncFrequency: 30s\nevictionHard: {memory.available: 300Mi, nodefs.available: 20%}\n",
			dropIns: []string{"maxPods: null\nclusterDomain: null\nsyncFrequency: null\nevictionHard: {nodefs.available: null}\n"},
			want:    map[string]string{"max-pods": "110", "cluster-domain": "", "sync-frequency": "1m0s", "eviction-hard": "memory.available<300Mi"}},
		{name: "null removes an earlier drop-in's", config: "maxPods: 50\n", dropIns: []string{"maxPods: 80\ncgroupRoot: /a\n", "maxPods: null\n"},
			want: map[string]string{"max-pods": "110", "cgroup-root": "/a"}},
		{name: "zero defaulted again", config: "maxPods: 50\nsyncFrequency: 30s\n", dropIns: []string{"maxPods: 0\nsyncFrequency: 0s\n"},
			want: map[string]string{"max-pods": "110", "sync-frequency": "1m0s"}},
		{name: "evictionHard taken away", config: "maxPods: 50\n", dropIns: []string{"evictionHard: null\n"},
			want: map[string]string{"eviction-hard": ""}},
		{name: "signal merged into the flags' defaults", dropIns: []string{"evictionHard: {memory.available: 200Mi}\n"},
			want: map[string]string{"eviction-hard": "imagefs.available<15%,imagefs.inodesFree<5%,memory.available<200Mi,nodefs.available<10%,nodefs.inodesFree<5%"}},
		{name: "report frequency of a null", config: "nodeStatusUpdateFrequency: 30s\nnodeStatusReportFrequency: 2m\n", dropIns: []string{"nodeStatusReportFrequency: null\n"},
			want: map[string]string{"node-status-update-frequency": "30s", "node-status-report-frequency": "30s"}},
		// nodeStatusReportFrequency is defaulted with the file, from its
		// nodeStatusUpdateFrequency, before any drop-in.
		{name: "report frequency defaulted before", config: "maxPods: 50\n", dropIns: []string{"nodeStatusUpdateFrequency: 20s\n"},
			want: map[string]string{"node-status-update-frequency": "20s", "node-status-report-frequency": "5m0s"}},
		{name: "report frequency from the file's update", config: "nodeStatusUpdateFrequency: 30s\n", dropIns: []string{"nodeStatusUpdateFrequency: 20s\n"},
			want: map[string]string{"node-status-update-frequency": "20s", "node-status-report-frequency": "30s"}},
		{name: "report frequency of the flags", dropIns: []string{"nodeStatusUpdateFrequency: 20s\n"},
			want: map[string]string{"node-status-update-frequency": "20s", "node-status-report-frequency": "5m0s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for i, body := range tc.dropIns {
				if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%02d.conf", i)), []byte(kcHeader+body), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			cmd := newKubeletCommand()
			if err := cmd.Flags().Parse(nil); err != nil {
				t.Fatal(err)
			}
			config := "" // the flags' configuration
			if tc.config != "" {
				config = writeKubeletConfig(t, kcHeader+tc.config)
			}
			if _, err := useKubeletConfigFile(cmd.Flags(), config, dir, slog.New(slog.NewTextHandler(new(bytes.Buffer), nil))); err != nil {
				t.Fatal(err)
			}
			get := flagGetter(cmd.Flags())
			for flag, want := range tc.want {
				if got := get(flag); got != want {
					t.Errorf("--%s = %q, want %q", flag, got, want)
				}
			}
		})
	}
}

// TestKubeletConfigLogFormatRebuildsLogger: the file's logging.format
// is taken up once the file is read (the logger is built again from it),
// so a format upstream's kubelet does not have stops the kubelet, with
// upstream's error, before it contacts the API server.
func TestKubeletConfigLogFormatRebuildsLogger(t *testing.T) {
	err := runKubelet(unreachableKubeconfig(t), "--config", writeKubeletConfig(t, kcHeader+"logging: {format: yaml}\n"))
	if err == nil || !strings.Contains(err.Error(), `initialize logging: logging.format: Invalid value: "yaml": Unsupported log format`) {
		t.Errorf("kubelet with logging.format yaml: %v", err)
	}
}

// TestKubeletConfigValidatesMergedConfiguration: as upstream's kubelet,
// the configuration is validated once, after the command line is applied
// over the file and its drop-ins: a bad value given on the command line is
// named by its field (maxPods (--max-pods)), a check across two fields
// sees the command line's value of one and the file's of the other, and
// the range checks upstream does on every field run on the fields
// kubeproof does not implement too.
func TestKubeletConfigValidatesMergedConfiguration(t *testing.T) {
	const prefix = "failed to validate kubelet configuration, error: "
	for _, tc := range []struct {
		name, body string
		args       []string
		want       string
	}{
		{name: "command line value", body: "maxPods: 5\n", args: []string{"--max-pods", "-1"},
			want: prefix + "invalid configuration: maxPods (--max-pods) -1 must not be a negative number, path: "},
		{name: "command line over a bad file value", body: "maxPods: -1\n", args: []string{"--max-pods", "5"}},
		{name: "command line against the file", body: "imageGCHighThresholdPercent: 50\n", args: []string{"--image-gc-low-threshold", "60"},
			want: prefix + "invalid configuration: imageGCLowThresholdPercent (--image-gc-low-threshold) 60 must be less than imageGCHighThresholdPercent (--image-gc-high-threshold) 50, path: "},
		{name: "port 0 on the command line", args: []string{"--port", "0"},
			want: prefix + "invalid configuration: port (--port) 0 must be between 1 and 65535, inclusive, path: "},
		{name: "CFS quota period", body: "cpuCFSQuotaPeriod: 200ms\n",
			want: prefix + "invalid configuration: cpuCFSQuotaPeriod (--cpu-cfs-quota-period) {200ms} requires feature gate CustomCPUCFSQuotaPeriod, path: "},
		{name: "kube API QPS", args: []string{"--kube-api-qps", "-2"},
			want: prefix + "invalid configuration: kubeAPIQPS (--kube-api-qps) -2 must not be a negative number, path: "},
		{name: "lease duration", args: []string{"--node-lease-duration", "0s"},
			want: prefix + "invalid configuration: nodeLeaseDurationSeconds must be greater than 0, path: "},
		{name: "registry burst", body: "registryBurst: -1\n",
			want: prefix + "invalid configuration: registryBurst (--registry-burst) -1 must not be a negative number, path: "},
		{name: "several unimplemented fields", body: "eventBurst: -1\noomScoreAdj: 2000\nhealthzPort: 70000\niptablesDropBit: 32\nhairpinMode: bogus\n",
			want: prefix + `[invalid configuration: eventBurst (--event-burst) -1 must not be a negative number, ` +
				`invalid configuration: healthzPort (--healthz-port) 70000 must be between 1 and 65535, inclusive, ` +
				`invalid configuration: iptablesDropBit (--iptables-drop-bit) 32 must be between 0 and 31, inclusive, ` +
				`invalid configuration: oomScoreAdj (--oom-score-adj) 2000 must be between -1000 and 1000, inclusive, ` +
				`invalid configuration: option "bogus" specified for hairpinMode (--hairpin-mode). Valid options are "none", "hairpin-veth" or "promiscuous-bridge"], path: `},
		{name: "topology manager", body: "topologyManagerPolicy: fancy\n",
			want: prefix + `invalid configuration: topologyManagerPolicy (--topology-manager-policy) "fancy" must be one of: ["none" "best-effort" "restricted" "single-numa-node"], path: `},
		{name: "container log files", body: "containerLogMaxFiles: 1\ncontainerLogMaxWorkers: 0\ncontainerLogMonitorInterval: 1s\n",
			want: prefix + "[invalid configuration: containerLogMaxWorkers must be greater than or equal to 1, invalid configuration: containerLogMonitorInterval must be a positive time duration greater than or equal to 3s, invalid configuration: containerLogMaxFiles must be greater than 1], path: "},
		{name: "pod logs dir not clean", body: "podLogsDir: /var/log/../pods/\n",
			want: prefix + `invalid configuration: pod logs path "/var/log/../pods/" must be normalized, path: `},
		{name: "enforcement option", args: []string{"--enforce-node-allocatable", "pods,bogus"},
			want: prefix + `invalid configuration: option "bogus" specified for enforceNodeAllocatable (--enforce-node-allocatable). Valid options are "pods", "system-reserved", "system-reserved-compressible", "kube-reserved", "kube-reserved-compressible" or "none", path: `},
		{name: "enforcement cgroup", body: "enforceNodeAllocatable: [pods, system-reserved]\n",
			want: prefix + `invalid configuration: systemReservedCgroup (--system-reserved-cgroup) must be specified when "system-reserved" or "system-reserved-compressible" included in enforceNodeAllocatable (--enforce-node-allocatable), path: `},
		{name: "enforcement none", body: "enforceNodeAllocatable: [none, pods]\n",
			want: prefix + `invalid configuration: enforceNodeAllocatable (--enforce-node-allocatable) may not contain additional enforcements when "none" is specified, path: `},
		{name: "enforcement cgroup given", body: "enforceNodeAllocatable: [pods, system-reserved]\n", args: []string{"--system-reserved-cgroup", "/sys"}},
		{name: "crash loop back-off too long", body: "crashLoopBackOff: {maxContainerRestartPeriod: 10m}\n",
			want: prefix + "invalid configuration: CrashLoopBackOff.MaxContainerRestartPeriod (got: 600 seconds) must be set between 1s and 300s, path: "},
		{name: "crash loop back-off too short", body: "crashLoopBackOff: {maxContainerRestartPeriod: 500ms}\nrunOnce: true\n",
			want: prefix + "[invalid configuration: runOnce (--runOnce) true, Runonce mode has been deprecated and should not be set, invalid configuration: CrashLoopBackOff.MaxContainerRestartPeriod (got: 0.5 seconds) must be set between 1s and 300s], path: "},
		{name: "crash loop back-off", body: "crashLoopBackOff: {maxContainerRestartPeriod: 1m}\n"},
		{name: "allowlist pattern", body: "imagePullCredentialsVerificationPolicy: NeverVerifyAllowlistedImages\npreloadedImagesVerificationAllowlist: [\"registry.example/app:1\"]\n",
			want: prefix + "invalid configuration: invalid image pattern in `preloadedImagesVerificationAllowlist`: neither tag nor digest is accepted in an image reference: registry.example/app:1, path: "},
		{name: "allowlist pattern and policy", body: "imagePullCredentialsVerificationPolicy: Sometimes\n", args: []string{"--preloaded-images-verification-allowlist", "registry.example/*"},
			want: prefix + "[invalid configuration: option \"Sometimes\" specified for imagePullCredentialsVerificationPolicy. Valid options are \"NeverVerify\", \"NeverVerifyPreloadedImages\", \"NeverVerifyAllowlistedImages\" or \"AlwaysVerify\", " +
				"invalid configuration: can't set `preloadedImagesVerificationAllowlist` if `imagePullCredentialsVertificationPolicy` is not \"NeverVerifyAllowlistedImages\"], path: "},
		{name: "log format of the file", body: "logging: {format: yaml}\n",
			want: `initialize logging: logging.format: Invalid value: "yaml": Unsupported log format`},
		{name: "log format of the command line", args: []string{"--log-format", "yaml"},
			want: `initialize logging: logging.format: Invalid value: "yaml": Unsupported log format`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := applyConfigFile(t, writeKubeletConfig(t, kcHeader+tc.body), tc.args...)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("got %v\nwant %s", err, tc.want)
			}
		})
	}
}

// TestKubeletConfigEnableServer: enableServer: false is upstream's
// --enable-server=false, which --port on the command line does not undo
// (upstream's kubelet serves nothing, whatever its port).
func TestKubeletConfigEnableServer(t *testing.T) {
	f, err := applyConfigFile(t, writeKubeletConfig(t, kcHeader+"enableServer: false\nport: 10999\n"), "--port", "10998")
	if err != nil {
		t.Fatal(err)
	}
	if fl := f.flags.Lookup("enable-server"); fl == nil || fl.Value.String() != "false" {
		t.Fatalf("--enable-server: %v, want false", fl)
	}
	if got := f.get("port"); got != "10998" {
		t.Errorf("--port %s, want 10998", got)
	}
	if port := kubeletAPIPort(f.flags); port != 0 {
		t.Errorf("kubelet API on port %d, want none", port)
	}
}

// TestKubeletConfigValidationErrorText: upstream's kubelet ends its
// validation error with the configuration object formatted as a string,
// which prints as its (empty) TypeMeta, not a path.
func TestKubeletConfigValidationErrorText(t *testing.T) {
	_, err := applyConfigFile(t, writeKubeletConfig(t, kcHeader+"maxPods: -1\n"))
	const want = "failed to validate kubelet configuration, error: invalid configuration: maxPods (--max-pods) -1 must not be a negative number, path: &TypeMeta{Kind:,APIVersion:,}"
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
}

// TestKubeletConfigDropInDecoding: a drop-in is read as upstream's
// kubelet reads it (into an unstructured object, then its
// apiVersion/kind checked): an unknown field is merged and then dropped
// without a word, a duplicate one stops the kubelet, a value of the
// wrong type fails only if it is still there once every drop-in is
// merged, and a file of another apiVersion or kind is refused by name.
func TestKubeletConfigDropInDecoding(t *testing.T) {
	for _, tc := range []struct {
		name    string
		dropIns map[string]string
		want    map[string]string
		err     string // the error after `failed to merge kubelet configs: failed to walk through kubelet dropin directory "DIR": `; %s is DIR
	}{
		{name: "unknown field", dropIns: map[string]string{"10.conf": kcHeader + "maxPods: 7\nnoSuchField: 1\n"}, want: map[string]string{"max-pods": "7"}},
		{name: "empty directory", want: map[string]string{"max-pods": "50"}},
		{name: "duplicate field", dropIns: map[string]string{"10.conf": kcHeader + "maxPods: 7\nmaxPods: 8\n"},
			err: "failed to load kubelet dropin file, path: %s/10.conf, error: strict decoding error: yaml: unmarshal errors:\n  line 4: key \"maxPods\" already set in map"},
		{name: "wrong type replaced later", dropIns: map[string]string{"10.conf": kcHeader + "maxPods: many\n", "20.conf": kcHeader + "maxPods: 9\n"},
			want: map[string]string{"max-pods": "9"}},
		{name: "wrong apiVersion", dropIns: map[string]string{"10.conf": "apiVersion: kubelet.config.k8s.io/v1\nkind: KubeletConfiguration\nmaxPods: 7\n"},
			err: "failed to load kubelet dropin file, path: %s/10.conf, unknown apiVersion/kind: kubelet.config.k8s.io/v1, Kind=KubeletConfiguration"},
		{name: "wrong kind", dropIns: map[string]string{"10.conf": "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeProxyConfiguration\n"},
			err: "failed to load kubelet dropin file, path: %s/10.conf, unknown apiVersion/kind: kubelet.config.k8s.io/v1beta1, Kind=KubeProxyConfiguration"},
		{name: "no apiVersion", dropIns: map[string]string{"10.conf": "kind: KubeletConfiguration\nmaxPods: 7\n"},
			err: "failed to load kubelet dropin file, path: %s/10.conf, unknown apiVersion/kind: /, Kind=KubeletConfiguration"},
		{name: "no kind", dropIns: map[string]string{"10.conf": "maxPods: 7\n"},
			err: "failed to load kubelet dropin file, path: %s/10.conf, error: Object 'Kind' is missing in 'maxPods: 7\n'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, body := range tc.dropIns {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			cmd := newKubeletCommand()
			var logs bytes.Buffer
			_, err := useKubeletConfigFile(cmd.Flags(), writeKubeletConfig(t, kcHeader+"maxPods: 50\n"), dir, slog.New(slog.NewTextHandler(&logs, nil)))
			if tc.err != "" {
				want := fmt.Sprintf("failed to merge kubelet configs: failed to walk through kubelet dropin directory %q: "+tc.err, dir, dir)
				if err == nil || err.Error() != want {
					t.Errorf("got %v\nwant %s", err, want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			get := flagGetter(cmd.Flags())
			for flag, want := range tc.want {
				if got := get(flag); got != want {
					t.Errorf("--%s = %q, want %q", flag, got, want)
				}
			}
			if logs.Len() > 0 {
				t.Errorf("logs: %s", logs.String())
			}
		})
	}
	// A wrong type still there once merged is upstream's unmarshal error.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "10.conf"), []byte(kcHeader+"maxPods: many\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := useKubeletConfigFile(newKubeletCommand().Flags(), "", dir, slog.New(slog.NewTextHandler(new(bytes.Buffer), nil)))
	const want = "failed to merge kubelet configs: failed to unmarshal merged JSON into kubelet configuration: json: cannot unmarshal string into Go struct field KubeletConfiguration.maxPods of type int32"
	if err == nil || err.Error() != want {
		t.Errorf("wrong type: %v\nwant %s", err, want)
	}
}
