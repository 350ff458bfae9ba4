package apiserver

import (
	"runtime"
	"strconv"

	"k8s.io/apimachinery/pkg/version"

	"github.com/kubeproof/kubeproof/impl/kubeversion"
)

// VersionInfo is what /version reports for a server of gitVersion, as
// kube-apiserver 1.37's effective version does: the binary's major and
// minor, an emulation version equal to the binary's (kubeproof emulates
// no older release) and a minimum compatibility version one minor below
// it. A gitVersion without a major and minor reports only itself. Its
// major and minor, parsed once by kubeversion.MajorMinor, also name the
// server's probes of its components (componentstatus.UserAgent).
func VersionInfo(gitVersion string) version.Info {
	info := version.Info{
		GitVersion: gitVersion, GitCommit: "unknown", GitTreeState: "clean",
		BuildDate: "1970-01-01T00:00:00Z", GoVersion: runtime.Version(), Compiler: runtime.Compiler,
		Platform: runtime.GOOS + "/" + runtime.GOARCH,
	}
	mm := kubeversion.MajorMinor(gitVersion)
	if mm == ([2]int{}) {
		return info
	}
	major, minor := strconv.Itoa(mm[0]), strconv.Itoa(mm[1])
	info.Major, info.Minor = major, minor
	info.EmulationMajor, info.EmulationMinor = major, minor
	if mm[1] > 0 {
		info.MinCompatibilityMajor, info.MinCompatibilityMinor = major, strconv.Itoa(mm[1]-1)
	}
	return info
}
