package kubeversion

import "testing"

// TestMajorMinor: the major and minor of a git version, none for one
// without them, and the user agents' "<major>.<minor>" ("." without).
func TestMajorMinor(t *testing.T) {
	for _, tc := range []struct {
		gitVersion string
		want       [2]int
		ua         string
	}{
		{Default, [2]int{1, 37}, "1.37"},
		{"v1.36.0", [2]int{1, 36}, "1.36"},
		{"v2.0.1", [2]int{2, 0}, "2.0"},
		{"1.37.2", [2]int{1, 37}, "1.37"},
		{"v1.37", [2]int{1, 37}, "1.37"},
		{"devel", [2]int{}, "."},
		{"v1", [2]int{}, "."},
		{"v1.x.0", [2]int{}, "."},
		{"v-1.37", [2]int{}, "."},
		{"", [2]int{}, "."},
	} {
		if got := MajorMinor(tc.gitVersion); got != tc.want {
			t.Errorf("MajorMinor(%q) = %v, want %v", tc.gitVersion, got, tc.want)
		}
		if got := UserAgentVersion(tc.gitVersion); got != tc.ua {
			t.Errorf("UserAgentVersion(%q) = %q, want %q", tc.gitVersion, got, tc.ua)
		}
	}
}
