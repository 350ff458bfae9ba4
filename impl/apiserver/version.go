package apiserver

import (
	"runtime"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/version"
)

// majorMinor is the major and minor number of a version such as
// "v1.37.2-kubeproof" (the kinds' deprecation releases are compared with
// it, and /version reports it); 0, 0 when it has none.
func majorMinor(gitVersion string) [2]int {
	f := strings.SplitN(strings.TrimPrefix(gitVersion, "v"), ".", 3)
	if len(f) < 2 {
		return [2]int{}
	}
	major, err1 := strconv.Atoi(f[0])
	minor, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil || major < 0 || minor < 0 {
		return [2]int{}
	}
	return [2]int{major, minor}
}

// VersionInfo is what /version reports for a server of gitVersion, as
// kube-apiserver 1.37's effective version does: the binary's major and
// minor, an emulation version equal to the binary's (kubeproof emulates
// no older release) and a minimum compatibility version one minor below
// it. A gitVersion without a major and minor reports only itself. Its
// major and minor, parsed once by majorMinor, also name the server's
// probes of its components (componentstatus.UserAgent).
func VersionInfo(gitVersion string) version.Info {
	info := version.Info{
		GitVersion: gitVersion, GitCommit: "unknown", GitTreeState: "clean",
		BuildDate: "1970-01-01T00:00:00Z", GoVersion: runtime.Version(), Compiler: runtime.Compiler,
		Platform: runtime.GOOS + "/" + runtime.GOARCH,
	}
	mm := majorMinor(gitVersion)
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
