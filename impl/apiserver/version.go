package apiserver

import (
	"strconv"
	"strings"
)

// majorMinor is the major and minor number of a version such as
// "v1.37.2-kubeproof" (the kinds' deprecation releases are compared with
// it); 0, 0 when it has none.
func majorMinor(gitVersion string) [2]int {
	f := strings.SplitN(strings.TrimPrefix(gitVersion, "v"), ".", 3)
	if len(f) < 2 {
		return [2]int{}
	}
	major, err1 := strconv.Atoi(f[0])
	minor, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil {
		return [2]int{}
	}
	return [2]int{major, minor}
}
