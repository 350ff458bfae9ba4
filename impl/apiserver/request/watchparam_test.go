package request

import (
	"net/http/httptest"
	"testing"
)

// A GET of a collection is a watch when its first "watch" parameter is
// present and neither "false" nor "0" (case-insensitively): kube-apiserver's
// request-info parser and its ListOptions decoding
// (Convert_Slice_string_To_bool) both read it so, so "?watch=", "?watch=yes"
// and "?watch=True" watch, and the authorizer is asked for "watch".
func TestWatchParameterAsKubeApiserver(t *testing.T) {
	for query, want := range map[string]string{
		"":                 "list",
		"?watch=":          "watch",
		"?watch":           "watch",
		"?watch=true":      "watch",
		"?watch=True":      "watch",
		"?watch=yes":       "watch",
		"?watch=1":         "watch",
		"?watch=2":         "watch",
		"?watch=false":     "list",
		"?watch=FALSE":     "list",
		"?watch=0":         "list",
		"?watch=0&watch=1": "list",
		"?watch=1&watch=0": "watch",
		"?limit=5":         "list",
	} {
		if got := Parse(httptest.NewRequest("GET", "/api/v1/pods"+query, nil)).Verb; got != want {
			t.Errorf("GET /api/v1/pods%s: verb %q, want %q", query, got, want)
		}
	}
}
