package main

import (
	"strings"
	"testing"
)

// TestKubeletConfigValidatesUpstreamChecks: the checks of upstream 1.37's
// ValidateKubeletConfiguration on registerWithTaints (after runOnce),
// reservedSystemCPUs, reservedMemory, showHiddenMetricsForVersion and
// tracing (after the image credential checks) and enableSystemLogQuery
// (after containerRuntimeEndpoint), in its order and words, and the
// logging checks upstream makes as it sets up logging, before the
// validation ("initialize logging: ...").
func TestKubeletConfigValidatesUpstreamChecks(t *testing.T) {
	const prefix = "failed to validate kubelet configuration, error: "
	for _, tc := range []struct {
		name, body string
		args       []string
		want       string
	}{
		{name: "taint key", body: "registerWithTaints: [{key: \"bad key\", effect: NoSchedule}]\n",
			want: prefix + "invalid taint: {bad key  NoSchedule <nil>}, path: "},
		{name: "taint value and effect", body: "registerWithTaints: [{key: a, value: \"-x\", effect: NoSchedule}, {key: b, effect: Sometimes}]\n",
			want: prefix + "[invalid taint: {a -x NoSchedule <nil>}, invalid taint: {b  Sometimes <nil>}], path: "},
		{name: "taint time added, after runOnce", body: "runOnce: true\nregisterWithTaints: [{key: a, effect: NoExecute, timeAdded: \"2026-01-01T00:00:00Z\"}]\n",
			want: prefix + "[invalid configuration: runOnce (--runOnce) true, Runonce mode has been deprecated and should not be set, invalid configuration: taint.TimeAdded is not nil], path: "},
		{name: "taints", body: "registerWithTaints: [{key: example.com/a, value: b, effect: NoSchedule}, {key: c, effect: \"\"}]\n"},
		{name: "reserved CPUs", body: "reservedSystemCPUs: \"0-x\"\n",
			want: prefix + `invalid configuration: unable to parse reservedSystemCPUs (--reserved-cpus) 0-x, error: strconv.Atoi: parsing "x": invalid syntax, path: `},
		{name: "reserved CPUs with a reserved cgroup", body: "reservedSystemCPUs: \"0-1\"\n", args: []string{"--kube-reserved-cgroup", "/kube"},
			want: prefix + "invalid configuration: can't use reservedSystemCPUs (--reserved-cpus) with systemReservedCgroup (--system-reserved-cgroup) or kubeReservedCgroup (--kube-reserved-cgroup), path: "},
		{name: "reserved CPUs", body: "reservedSystemCPUs: \"0-1,3\"\n"},
		{name: "reserved memory", body: "reservedMemory: [{numaNode: 0, limits: {memory: 0, cpu: 1}}, {numaNode: 0, limits: {memory: 1Gi, hugepages-2Mi: 2Mi}}, {numaNode: 1, limits: {memory: 1Gi}}]\n",
			want: prefix + `[invalid configuration: the limit type "cpu" for NUMA node 0 is not supported, only [memory hugepages-<HugePageSize>] is accepted, ` +
				`invalid configuration: reserved memory may not be zero for NUMA node 0 and resource "memory", ` +
				`invalid configuration: the reserved memory has a duplicate value for NUMA node 0 and resource "memory"], path: `},
		{name: "hidden metrics version", body: "showHiddenMetricsForVersion: \"1.30\"\n",
			want: prefix + `invalid showHiddenMetricsForVersion: showHiddenMetricsForVersion: Invalid value: "1.30": must be omitted or have the value '1.36'; only the previous minor version is allowed, path: `},
		{name: "hidden metrics of the previous version", body: "showHiddenMetricsForVersion: \"1.36\"\n"},
		{name: "tracing", body: "tracing: {samplingRatePerMillion: -1, endpoint: \"http://collector:4317\"}\n",
			want: prefix + `[tracing.samplingRatePerMillion: Invalid value: -1: sampling rate must be positive, ` +
				`tracing.endpoint: Invalid value: "http://collector:4317": unsupported scheme: http.  Options are none, dns, unix, or unix-abstract.  See https://github.com/grpc/grpc/blob/master/doc/naming.md], path: `},
		{name: "tracing rate", body: "tracing: {samplingRatePerMillion: 1000001}\n",
			want: prefix + `tracing.samplingRatePerMillion: Invalid value: 1000001: sampling rate per million must be less than or equal to one million, path: `},
		{name: "tracing endpoint", body: "tracing: {samplingRatePerMillion: 100, endpoint: \"collector:4317\"}\n"},
		{name: "order", body: "reservedSystemCPUs: \"x\"\nshowHiddenMetricsForVersion: \"2\"\nmemoryThrottlingFactor: 2\nhairpinMode: bogus\n",
			want: prefix + `[invalid configuration: option "bogus" specified for hairpinMode (--hairpin-mode). Valid options are "none", "hairpin-veth" or "promiscuous-bridge", ` +
				`invalid configuration: unable to parse reservedSystemCPUs (--reserved-cpus) x, error: strconv.Atoi: parsing "x": invalid syntax, ` +
				`invalid showHiddenMetricsForVersion: showHiddenMetricsForVersion: Invalid value: "2": must be omitted or have the value '1.36'; only the previous minor version is allowed, ` +
				`invalid configuration: memoryThrottlingFactor 2 must be greater than 0 and less than or equal to 1.0], path: `},
		{name: "system log query", body: "enableSystemLogQuery: true\nenableSystemLogHandler: false\ncontainerLogMaxFiles: 1\n",
			want: prefix + `[invalid configuration: NodeLogQuery feature gate is required for enableSystemLogQuery, ` +
				`invalid configuration: enableSystemLogHandler is required for enableSystemLogQuery, ` +
				`invalid configuration: containerLogMaxFiles must be greater than 1], path: `},
		{name: "logging vmodule with json", body: "logging: {format: json, vmodule: [{filePattern: \"a=b\", verbosity: 2}]}\n",
			want: `initialize logging: [logging.vmodule: Forbidden: Only supported for text log format, logging.vmodule[0]: Invalid value: "a=b": File pattern must not contain equal sign or comma]`},
		{name: "logging flush frequency and alpha options", body: "logging: {flushFrequency: -1s, options: {text: {splitStream: true}, json: {infoBufferSize: 1Mi}}}\n",
			want: `initialize logging: [logging.flushFrequency: Invalid value: "-1s": Must be greater than zero, ` +
				`logging.options.text.splitStream: Forbidden: Feature LoggingAlphaOptions is disabled, logging.options.json.infoBufferSize: Forbidden: Feature LoggingAlphaOptions is disabled]`},
		{name: "logging vmodule pattern", body: "logging: {vmodule: [{filePattern: \"\", verbosity: 1}]}\n",
			want: `initialize logging: logging.vmodule[0]: Required value: File pattern must not be empty`},
		{name: "logging verbosity", body: "logging: {verbosity: 4294967295}\n",
			want: `initialize logging: logging.verbosity: Invalid value: 4294967295: Must be <= 2147483647`},
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
