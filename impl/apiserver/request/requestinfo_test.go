package request

import (
	"context"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	cases := []struct {
		method, url string
		want        Info
	}{
		{"GET", "/api/v1/namespaces/ns/pods", Info{IsResourceRequest: true, Verb: "list", APIPrefix: "api", APIVersion: "v1", Namespace: "ns", Resource: "pods"}},
		{"GET", "/api/v1/namespaces/ns/pods?watch=true", Info{IsResourceRequest: true, Verb: "watch", APIPrefix: "api", APIVersion: "v1", Namespace: "ns", Resource: "pods"}},
		{"GET", "/api/v1/watch/namespaces/ns/pods/p", Info{IsResourceRequest: true, Verb: "watch", APIPrefix: "api", APIVersion: "v1", Namespace: "ns", Resource: "pods", Name: "p"}},
		{"GET", "/api/v1/namespaces/ns/pods/p", Info{IsResourceRequest: true, Verb: "get", APIPrefix: "api", APIVersion: "v1", Namespace: "ns", Resource: "pods", Name: "p"}},
		{"PUT", "/api/v1/namespaces/ns/pods/p/status", Info{IsResourceRequest: true, Verb: "update", APIPrefix: "api", APIVersion: "v1", Namespace: "ns", Resource: "pods", Name: "p", Subresource: "status"}},
		{"POST", "/api/v1/namespaces/ns/pods/p/binding", Info{IsResourceRequest: true, Verb: "create", APIPrefix: "api", APIVersion: "v1", Namespace: "ns", Resource: "pods", Name: "p", Subresource: "binding"}},
		{"DELETE", "/api/v1/namespaces/ns/configmaps", Info{IsResourceRequest: true, Verb: "deletecollection", APIPrefix: "api", APIVersion: "v1", Namespace: "ns", Resource: "configmaps"}},
		{"GET", "/api/v1/namespaces/ns", Info{IsResourceRequest: true, Verb: "get", APIPrefix: "api", APIVersion: "v1", Namespace: "ns", Resource: "namespaces", Name: "ns"}},
		{"PUT", "/api/v1/namespaces/ns/finalize", Info{IsResourceRequest: true, Verb: "update", APIPrefix: "api", APIVersion: "v1", Namespace: "ns", Resource: "namespaces", Name: "ns", Subresource: "finalize"}},
		{"GET", "/api/v1/namespaces", Info{IsResourceRequest: true, Verb: "list", APIPrefix: "api", APIVersion: "v1", Resource: "namespaces"}},
		{"PATCH", "/apis/apps/v1/namespaces/ns/deployments/d/scale", Info{IsResourceRequest: true, Verb: "patch", APIPrefix: "apis", APIGroup: "apps", APIVersion: "v1", Namespace: "ns", Resource: "deployments", Name: "d", Subresource: "scale"}},
		{"GET", "/apis/apps/v1/deployments", Info{IsResourceRequest: true, Verb: "list", APIPrefix: "apis", APIGroup: "apps", APIVersion: "v1", Resource: "deployments"}},
		{"GET", "/apis/apps/v1", Info{Verb: "get"}},
		{"GET", "/healthz", Info{Verb: "get"}},
	}
	for _, c := range cases {
		got := Parse(httptest.NewRequest(c.method, c.url, nil))
		got.Parts, got.Path = nil, ""
		c.want.Parts = nil
		if got.IsResourceRequest != c.want.IsResourceRequest || got.Verb != c.want.Verb || got.APIGroup != c.want.APIGroup ||
			got.APIVersion != c.want.APIVersion || got.Namespace != c.want.Namespace || got.Resource != c.want.Resource ||
			got.Name != c.want.Name || got.Subresource != c.want.Subresource {
			t.Errorf("%s %s: got %+v, want %+v", c.method, c.url, *got, c.want)
		}
	}
}

func TestLongRunningAndReadOnly(t *testing.T) {
	w := Parse(httptest.NewRequest("GET", "/api/v1/pods?watch=1", nil))
	if !w.IsLongRunning() || !w.IsReadOnly() {
		t.Fatalf("watch: long-running %v read-only %v", w.IsLongRunning(), w.IsReadOnly())
	}
	c := Parse(httptest.NewRequest("POST", "/api/v1/namespaces/a/pods", nil))
	if c.IsLongRunning() || c.IsReadOnly() {
		t.Fatalf("create: long-running %v read-only %v", c.IsLongRunning(), c.IsReadOnly())
	}
}

func TestSelectors(t *testing.T) {
	l := Parse(httptest.NewRequest("GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Dn1&labelSelector=app%3Dweb&watch=true", nil))
	if l.FieldSelector != "spec.nodeName=n1" || l.LabelSelector != "app=web" {
		t.Fatalf("watch selectors %q %q", l.FieldSelector, l.LabelSelector)
	}
	g := Parse(httptest.NewRequest("GET", "/api/v1/namespaces/a/pods/p?fieldSelector=x%3Dy", nil))
	if g.FieldSelector != "" {
		t.Fatalf("a get carries no selector, got %q", g.FieldSelector)
	}
}

// NewContext carries the Info Parse gives, Parts included, for paths with
// fewer, as many and more segments than fit in the node, and it is the
// node SetUser and WithTimeout record into.
func TestNewContextCarriesWhatParseGives(t *testing.T) {
	for _, url := range []string{
		"/", "/healthz", "/api", "/api/v1", "/api/v1/pods",
		"/api/v1/namespaces/ns/pods/p/status",
		"/apis/apps/v1/namespaces/ns/deployments/d/scale",           // 8 segments, as many as fit
		"/apis/apps/v1/namespaces/ns/deployments/d/scale/more",      // 9
		"/apis/apps/v1/namespaces/ns/deployments/d/scale/more/more", // 10
		"/api//v1/namespaces//pods/", "//api/v1/namespaces/ns/pods?watch=1&fieldSelector=a%3Db",
	} {
		for _, method := range []string{"GET", "POST", "PUT", "DELETE"} {
			r := httptest.NewRequest(method, url, nil)
			want := Parse(r)
			ctx := NewContext(context.Background(), r)
			got := InfoFrom(ctx)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s %s: got %+v, want %+v", method, url, *got, *want)
			}
			alice := &User{Name: "alice"}
			if SetUser(ctx, alice) != ctx || UserFrom(ctx) != alice {
				t.Errorf("%s %s: SetUser did not record into the node", method, url)
			}
		}
	}
}

// splitPath into a buffer is strings.Split of the trimmed path.
func TestSplitPathIsStringsSplit(t *testing.T) {
	var buf [maxPathSegments]string
	for _, p := range []string{"", "/", "a", "/a/", "a//b", "/a/b/c/d/e/f/g/h", "/a/b/c/d/e/f/g/h/i", "///"} {
		want := []string(nil)
		if tp := strings.Trim(p, "/"); tp != "" {
			want = strings.Split(tp, "/")
		}
		if got := splitPath(p, buf[:]); !slices.Equal(got, want) {
			t.Errorf("%q: got %q, want %q", p, got, want)
		}
	}
}
