package apiserver

import (
	"slices"
	"strings"
	"testing"
)

func TestLeadingSegmentsIsSplitN(t *testing.T) {
	for _, p := range []string{
		"", "api", "apis", "api/v1", "apis/apps", "apis/apps/v1", "api/v1/namespaces",
		"api/v1/namespaces/default/configmaps", "apis/apps/v1/namespaces/ns/deployments/d/scale",
		"api//v1", "apis/g/v//x", "a/b/c/d", "a/b/c/d/e/f",
	} {
		var buf [4]string
		if got, want := leadingSegments(p, &buf), strings.SplitN(p, "/", 4); !slices.Equal(got, want) {
			t.Errorf("leadingSegments(%q) = %q, want %q", p, got, want)
		}
	}
}
