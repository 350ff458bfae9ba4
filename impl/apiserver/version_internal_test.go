package apiserver

import (
	"testing"

	"github.com/kubeproof/kubeproof/impl/apiserver/componentstatus"
	"github.com/kubeproof/kubeproof/impl/kubeversion"
)

// TestVersionInfo: /version reports the binary's major and minor and, as
// kube-apiserver since 1.33, the emulation version (the binary's) and the
// minimum compatibility version (one minor below), all from GitVersion;
// the component probes' user agent names the same major and minor,
// empty as kube-apiserver's when there are none ("kube-probe/.").
func TestVersionInfo(t *testing.T) {
	for _, tc := range []struct {
		gitVersion                                     string
		major, minor, emuMajor, emuMinor, minCompMajor string
		minCompMinor                                   string
		probe                                          string
	}{
		{"v1.37.2-kubeproof", "1", "37", "1", "37", "1", "36", "kube-probe/1.37"},
		{"v1.36.0", "1", "36", "1", "36", "1", "35", "kube-probe/1.36"},
		{"v2.0.1", "2", "0", "2", "0", "", "", "kube-probe/2.0"},
		{"1.37.2", "1", "37", "1", "37", "1", "36", "kube-probe/1.37"},
		{"devel", "", "", "", "", "", "", "kube-probe/."},
		{"v1.x.0", "", "", "", "", "", "", "kube-probe/."},
		{"v-1.37", "", "", "", "", "", "", "kube-probe/."},
	} {
		got := VersionInfo(tc.gitVersion)
		want := [...]string{tc.major, tc.minor, tc.emuMajor, tc.emuMinor, tc.minCompMajor, tc.minCompMinor}
		have := [...]string{got.Major, got.Minor, got.EmulationMajor, got.EmulationMinor, got.MinCompatibilityMajor, got.MinCompatibilityMinor}
		if have != want || got.GitVersion != tc.gitVersion {
			t.Errorf("VersionInfo(%q) = %q (gitVersion %q), want %q", tc.gitVersion, have, got.GitVersion, want)
		}
		if mm := kubeversion.MajorMinor(tc.gitVersion); tc.major == "" && mm != ([2]int{}) {
			t.Errorf("kubeversion.MajorMinor(%q) = %v, want none", tc.gitVersion, mm)
		}
		if ua := componentstatus.UserAgent(got); ua != tc.probe {
			t.Errorf("probe user agent of %q: %q, want %q", tc.gitVersion, ua, tc.probe)
		}
	}
}
