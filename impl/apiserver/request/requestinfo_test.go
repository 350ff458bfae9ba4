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

// A list or watch whose field selector requires metadata.name is named by
// it for authorization (Named), as kube-apiserver's request-info parser
// names it, unless its list options do not decode or the name could not
// be a path segment; the path's Name stays empty for the handlers.
func TestSelectedName(t *testing.T) {
	for url, want := range map[string]string{
		"/api/v1/namespaces/ns/secrets?fieldSelector=metadata.name%3Ds":                          "s",
		"/api/v1/namespaces/ns/secrets?fieldSelector=metadata.name%3D%3Ds&watch=1":               "s",
		"/api/v1/nodes?fieldSelector=metadata.name%3Dn%2Cspec.unschedulable%3Dfalse":             "n",
		"/api/v1/namespaces/ns/secrets?fieldSelector=metadata.name%21%3Ds":                       "",
		"/api/v1/namespaces/ns/secrets?fieldSelector=metadata.name%3Ds&limit=ten":                "",
		"/api/v1/namespaces/ns/secrets?fieldSelector=metadata.name%3Ds&timeoutSeconds=x":         "",
		"/api/v1/namespaces/ns/secrets?fieldSelector=metadata.name%3Ds&labelSelector=a%20in%20(": "",
		"/api/v1/namespaces/ns/secrets?fieldSelector=metadata.name%3D..":                         "",
		"/api/v1/namespaces/ns/secrets?fieldSelector=metadata.name%3Da%25b":                      "",
		"/api/v1/watch/namespaces/ns/secrets?fieldSelector=metadata.name%3Ds":                    "",
		"/api/v1/namespaces/ns/secrets/x?fieldSelector=metadata.name%3Ds":                        "x",
	} {
		info := Parse(httptest.NewRequest("GET", url, nil))
		if got := info.Named().Name; got != want {
			t.Errorf("%s: named %q, want %q", url, got, want)
		}
		if strings.Contains(url, "/secrets?") && info.Name != "" {
			t.Errorf("%s: the path's Name is %q, want none", url, info.Name)
		}
	}
	if (*Info)(nil).Named() != nil {
		t.Error("nil Info named")
	}
}
