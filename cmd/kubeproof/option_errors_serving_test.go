package main

import (
	"fmt"
	"net"
	"testing"

	"github.com/kubeproof/kubeproof/impl/cluster"
)

// TestAPIServerServingAndServiceOptionErrors: each secure serving and
// Services check of `kubeproof apiserver` gives kube-apiserver's message,
// alone when it is the only error (--etcd-servers given).
func TestAPIServerServingAndServiceOptionErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"port too high", []string{"--secure-port", "70000"},
			"--secure-port 70000 must be between 1 and 65535, inclusive. It cannot be turned off with 0"},
		{"port negative", []string{"--secure-port", "-1"},
			"--secure-port -1 must be between 1 and 65535, inclusive. It cannot be turned off with 0"},
		{"primary range too large", []string{"--service-cluster-ip-range", "10.0.0.0/8"},
			"specified --service-cluster-ip-range is too large; for 32-bit addresses, the mask must be >= 12"},
		{"IPv6 primary range too large", []string{"--service-cluster-ip-range", "fd00::/64"},
			"specified --service-cluster-ip-range is too large; for 128-bit addresses, the mask must be >= 108"},
		{"secondary range too large", []string{"--service-cluster-ip-range", "10.0.0.0/16,fd00::/64"},
			"specified --service-cluster-ip-range[1] is too large; for 128-bit addresses, the mask must be >= 108"},
		{"same family twice", []string{"--service-cluster-ip-range", "10.0.0.0/16,10.1.0.0/16"},
			"--service-cluster-ip-range[0] and --service-cluster-ip-range[1] must be of different IP family"},
		{"three ranges", []string{"--service-cluster-ip-range", "10.0.0.0/16,fd00::/108,10.2.0.0/16"},
			"--service-cluster-ip-range must not contain more than two entries"},
		{"advertised family differs", []string{"--service-cluster-ip-range", "fd00::/108", "--advertise-address", "10.0.0.1"},
			`service IP family "fd00::/108" must match public address family "10.0.0.1"`},
		{"advertised family differs, range masked", []string{"--service-cluster-ip-range", "10.96.0.1/12", "--advertise-address", "fd00::1"},
			`service IP family "10.96.0.0/12" must match public address family "fd00::1"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			certDir := t.TempDir()
			args := append([]string{"apiserver", "--cert-dir", certDir, "--etcd-servers", "http://127.0.0.1:1"}, tc.args...)
			err := runCommandErr(t, args...)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("error\n%v\nwant\n%s", err, tc.want)
			}
			assertEmptyDir(t, certDir)
		})
	}
}

// TestAPIServerServiceRangeCompletionErrorsComeAlone: a
// --service-cluster-ip-range entry that is no CIDR, or a primary range of
// fewer than 8 addresses, is found by kube-apiserver while completing its
// options, before validation: that error comes alone, in its words, even
// with other options wrong.
func TestAPIServerServiceRangeCompletionErrorsComeAlone(t *testing.T) {
	for _, tc := range []struct{ value, want string }{
		{"nope", "service-cluster-ip-range[0] is not a valid cidr"},
		{"nope,fd00::/108", "service-cluster-ip-range[0] is not a valid cidr"},
		{"10.0.0.0/30", "error determining service IP ranges for primary service cidr: the service cluster IP range must be at least 8 IP addresses"},
		{"fd00::/126", "error determining service IP ranges for primary service cidr: the service cluster IP range must be at least 8 IP addresses"},
		{"10.0.0.0/16,nope", "service-cluster-ip-range[1] is not an ip net"},
		{"10.0.0.0/16,", "service-cluster-ip-range[1] is not an ip net"},
		{"10.0.0.0/16, fd00::/108", "service-cluster-ip-range[1] is not an ip net"},
	} {
		t.Run(tc.value, func(t *testing.T) {
			certDir := t.TempDir()
			err := runCommandErr(t, "apiserver", "--cert-dir", certDir, "--secure-port", "70000",
				"--enable-admission-plugins", "Nope", "--service-cluster-ip-range", tc.value)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("error\n%v\nwant\n%s", err, tc.want)
			}
			assertEmptyDir(t, certDir)
		})
	}
}

// TestServiceOptionsValidAreAccepted: ranges and addresses kube-apiserver
// accepts give no error (the command would start with them, so the
// validation is called directly).
func TestServiceOptionsValidAreAccepted(t *testing.T) {
	for _, o := range []cluster.ServiceOptions{
		{ClusterIPRange: "10.96.0.0/12"},
		{ClusterIPRange: ""}, // the default range
		{ClusterIPRange: "10.0.0.0/29"},
		{ClusterIPRange: "10.0.0.0/16,fd00::/108"},
		{ClusterIPRange: "fd00::/108,10.0.0.0/16", AdvertiseAddress: net.ParseIP("fd00::10")},
		{ClusterIPRange: "10.0.0.0/16", AdvertiseAddress: net.ParseIP("192.0.2.1")},
		// the none reconciler writes no Endpoints: any advertised family
		{ClusterIPRange: "fd00::/108", AdvertiseAddress: net.ParseIP("192.0.2.1"), EndpointReconcilerType: "none"},
	} {
		if err := validateAPIServerOptions([]string{"http://127.0.0.1:1"}, net.IPv4(127, 0, 0, 1), 6443, o, cluster.AuthOptions{}); err != nil {
			t.Errorf("%+v: %v", o, err)
		}
	}
}

// TestAdvertisedFamilyAsKubeAPIServerDefaultsIt: an unspecified
// --advertise-address counts as none given, and without one
// kube-apiserver advertises a bind address that is neither unspecified
// nor loopback: the family check applies to that, in its words; an
// unspecified or loopback bind address (the host's address is advertised)
// is not refused.
func TestAdvertisedFamilyAsKubeAPIServerDefaultsIt(t *testing.T) {
	for _, tc := range []struct {
		advertise, bind string
		ranges          string
		reconciler      string
		want            string
	}{
		{advertise: "::", bind: "127.0.0.1", ranges: "10.96.0.0/12"},
		{advertise: "0.0.0.0", bind: "::", ranges: "fd00::/108"},
		{bind: "::1", ranges: "10.96.0.0/12"},
		{bind: "::", ranges: "10.96.0.0/12"},
		{bind: "0.0.0.0", ranges: "fd00::/108"},
		{bind: "192.0.2.1", ranges: "10.96.0.0/12,fd00::/108"},
		{advertise: "192.0.2.1", bind: "fd00::5", ranges: "10.96.0.0/12"},
		{bind: "fd00::5", ranges: "10.96.0.0/12",
			want: `service IP family "10.96.0.0/12" must match public address family "fd00::5"`},
		{advertise: "::", bind: "192.0.2.1", ranges: "fd00::/108",
			want: `service IP family "fd00::/108" must match public address family "192.0.2.1"`},
		// the none reconciler writes no Endpoints: no check
		{advertise: "::", bind: "192.0.2.1", ranges: "fd00::/108", reconciler: "none"},
	} {
		o := cluster.ServiceOptions{ClusterIPRange: tc.ranges, AdvertiseAddress: net.ParseIP(tc.advertise), EndpointReconcilerType: tc.reconciler}
		err := validateAPIServerOptions([]string{"http://127.0.0.1:1"}, net.ParseIP(tc.bind), 6443, o, cluster.AuthOptions{})
		if got := fmt.Sprint(err); (tc.want == "" && err != nil) || (tc.want != "" && got != tc.want) {
			t.Errorf("advertise %q bind %q ranges %q: error %v, want %q", tc.advertise, tc.bind, tc.ranges, err, tc.want)
		}
	}
}

// TestAPIServerBindAddressFamilyChecked: `kubeproof apiserver` with a
// specific --bind-address of another family than the service range and
// no --advertise-address is refused before it writes anything, as
// kube-apiserver refuses it.
func TestAPIServerBindAddressFamilyChecked(t *testing.T) {
	certDir := t.TempDir()
	err := runCommandErr(t, "apiserver", "--cert-dir", certDir, "--etcd-servers", "http://127.0.0.1:1", "--bind-address", "fd00::5")
	if want := `service IP family "10.96.0.0/12" must match public address family "fd00::5"`; err == nil || err.Error() != want {
		t.Fatalf("error\n%v\nwant\n%s", err, want)
	}
	assertEmptyDir(t, certDir)
}

// TestAPIServerNodePortRangeFlagErrors: --service-node-port-range is
// parsed as kube-apiserver's flag is (its value type's words, in the flag
// error), so a bad range is refused before anything else.
func TestAPIServerNodePortRangeFlagErrors(t *testing.T) {
	for _, tc := range []struct{ value, want string }{
		{"abc", `invalid argument "abc" for "--service-node-port-range" flag: strconv.Atoi: parsing "abc": invalid syntax`},
		{"30000-70000", `invalid argument "30000-70000" for "--service-node-port-range" flag: the port range cannot be greater than 65535: 30000-70000`},
		{"32767-30000", `invalid argument "32767-30000" for "--service-node-port-range" flag: end port cannot be less than start port: 32767-30000`},
	} {
		t.Run(tc.value, func(t *testing.T) {
			err := runCommandErr(t, "apiserver", "--cert-dir", t.TempDir(), "--service-node-port-range", tc.value)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("error\n%v\nwant\n%s", err, tc.want)
			}
		})
	}
}

// TestNodePortRangeFlagForms: the flag takes kube-apiserver's forms
// (low-high, a single port, base+offset) and keeps the range as low-high.
func TestNodePortRangeFlagForms(t *testing.T) {
	for in, want := range map[string]string{"30000-32767": "30000-32767", "31000": "31000-31000", "30000+99": "30000-30099", "": ""} {
		var s string
		if err := (nodePortRangeFlag{&s}).Set(in); err != nil || s != want {
			t.Errorf("Set(%q): %q, %v; want %q", in, s, err, want)
		}
	}
}

// TestAPIServerUnknownEndpointReconcilerType: an unknown
// --endpoint-reconciler-type is no validation error in kube-apiserver but
// stops it while its configuration is built, in its words; kubeproof
// reports it right after validation, before any file is written.
func TestAPIServerUnknownEndpointReconcilerType(t *testing.T) {
	certDir := t.TempDir()
	err := runCommandErr(t, "apiserver", "--cert-dir", certDir, "--etcd-servers", "http://127.0.0.1:1", "--endpoint-reconciler-type", "foo")
	if want := "Reconciler not implemented: foo"; err == nil || err.Error() != want {
		t.Fatalf("error\n%v\nwant\n%s", err, want)
	}
	assertEmptyDir(t, certDir)
}

// TestAPIServerOptionErrorsOrder: with errors in several groups at once,
// they come together in kube-apiserver's order: etcd, secure serving,
// authentication, audit, admission, then the Service ranges and the
// advertised address's family.
func TestAPIServerOptionErrorsOrder(t *testing.T) {
	certDir := t.TempDir()
	err := runCommandErr(t, "apiserver", "--cert-dir", certDir, "--secure-port", "70000",
		"--service-cluster-ip-range", "10.0.0.0/8,10.1.0.0/16,fd00::/108", "--advertise-address", "fd00::1",
		"--service-account-issuer", "https://a", "--service-account-issuer", "https://a", "--service-account-key-file", "/nonexistent/sa.pub",
		"--audit-log-path", "-", "--audit-log-format", "xml",
		"--enable-admission-plugins", "Nope")
	want := `[--etcd-servers must be specified, ` +
		`--secure-port 70000 must be between 1 and 65535, inclusive. It cannot be turned off with 0, ` +
		`service-account-issuer "https://a" is already specified, ` +
		`invalid audit log format xml, allowed formats are "legacy,json", ` +
		`enable-admission-plugins plugin "Nope" is unknown, ` +
		`--service-cluster-ip-range must not contain more than two entries, ` +
		`specified --service-cluster-ip-range is too large; for 32-bit addresses, the mask must be >= 12, ` +
		`--service-cluster-ip-range[0] and --service-cluster-ip-range[1] must be of different IP family, ` +
		`service IP family "10.0.0.0/8" must match public address family "fd00::1"]`
	if err == nil || err.Error() != want {
		t.Fatalf("error\n%v\nwant\n%s", err, want)
	}
	assertEmptyDir(t, certDir)
}

// TestUpReportsServiceOptionErrors: `kubeproof up` checks its Service
// flags as `kubeproof apiserver` does: completion errors alone, the
// others after the request chain's, before it starts anything.
func TestUpReportsServiceOptionErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--service-cluster-ip-range", "10.0.0.0/16,10.1.0.0/16", "--disable-admission-plugins", "Nope"},
			`[disable-admission-plugins plugin "Nope" is unknown, --service-cluster-ip-range[0] and --service-cluster-ip-range[1] must be of different IP family]`},
		{[]string{"--service-cluster-ip-range", "nope", "--disable-admission-plugins", "Nope"},
			"service-cluster-ip-range[0] is not a valid cidr"},
		{[]string{"--endpoint-reconciler-type", "foo"}, "Reconciler not implemented: foo"},
	} {
		dataDir := t.TempDir()
		err := runCommandErr(t, append([]string{"up", "--data-dir", dataDir, "--port", "0"}, tc.args...)...)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%v: error\n%v\nwant\n%s", tc.args, err, tc.want)
		}
		assertEmptyDir(t, dataDir)
	}
}

// TestAPIServerBindAddressFlagError: --bind-address is an IP flag, as
// kube-apiserver's: a value that is no IP address is refused while the
// flags are parsed, in the flag type's words, before anything else.
func TestAPIServerBindAddressFlagError(t *testing.T) {
	certDir := t.TempDir()
	err := runCommandErr(t, "apiserver", "--cert-dir", certDir, "--bind-address", "nope", "--secure-port", "70000")
	if want := `invalid argument "nope" for "--bind-address" flag: failed to parse IP: "nope"`; err == nil || err.Error() != want {
		t.Fatalf("error\n%v\nwant\n%s", err, want)
	}
	assertEmptyDir(t, certDir)
}
