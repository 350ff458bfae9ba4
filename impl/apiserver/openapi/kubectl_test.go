package openapi

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"

	"github.com/kubeproof/kubeproof/impl/apiserver/resource"
)

// fakeAPIServer is just enough of an API server for kubectl: discovery of
// the issue's resources, the OpenAPI handler under test, and an in-memory
// pods endpoint that records what kubectl sends.
type fakeAPIServer struct {
	openapi http.Handler

	mu       sync.Mutex
	requests []string          // method, path and query of every request
	pods     map[string][]byte // by name, in namespace default
	writes   []recordedWrite
}

type recordedWrite struct {
	method, query, contentType, body string
}

func (s *fakeAPIServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requests = append(s.requests, r.Method+" "+r.URL.RequestURI())
	s.mu.Unlock()
	switch {
	case strings.HasPrefix(r.URL.Path, "/openapi/"):
		s.openapi.ServeHTTP(w, r)
	case strings.HasPrefix(r.URL.Path, "/api/v1/namespaces/default/pods"):
		s.servePods(w, r)
	default:
		if body, ok := discoveryDocuments(issueResources())[r.URL.Path]; ok {
			writeJSON(w, http.StatusOK, body)
			return
		}
		writeJSON(w, http.StatusNotFound, &metav1.Status{
			TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
			Reason: metav1.StatusReasonNotFound, Code: http.StatusNotFound, Message: "the server could not find the requested resource",
		})
	}
}

func (s *fakeAPIServer) servePods(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, "/api/v1/namespaces/default/pods"), "/")
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	switch r.Method {
	case http.MethodGet:
		if pod, ok := s.pods[name]; ok {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(pod)
			return
		}
		writeJSON(w, http.StatusNotFound, &metav1.Status{
			TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
			Reason: metav1.StatusReasonNotFound, Code: http.StatusNotFound, Message: `pods "` + name + `" not found`,
			Details: &metav1.StatusDetails{Name: name, Kind: "pods"},
		})
	case http.MethodPost, http.MethodPatch:
		s.writes = append(s.writes, recordedWrite{r.Method, r.URL.RawQuery, r.Header.Get("Content-Type"), string(body)})
		if r.Method == http.MethodPost {
			var meta struct {
				Metadata struct {
					Name string `json:"name"`
				} `json:"metadata"`
			}
			_ = json.Unmarshal(body, &meta)
			name = meta.Metadata.Name
			if !strings.Contains(r.URL.RawQuery, "dryRun=All") {
				s.pods[name] = body
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write(body)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(s.pods[name])
	default:
		w.WriteHeader(http.StatusMethodNotAllowed)
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// discoveryDocuments answers /api, /apis, /version and each group/version's resource
// list for resources.
func discoveryDocuments(resources []*resource.Resource) map[string]any {
	out := map[string]any{
		"/api":     &metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"}},
		"/version": &version.Info{Major: "1", Minor: "37", GitVersion: "v1.37.2"},
	}
	groups := &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
	lists := map[string]*metav1.APIResourceList{}
	for _, r := range resources {
		path := "/" + groupVersionPath(r.GroupVersion)
		list, ok := lists[path]
		if !ok {
			list = &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: r.GroupVersion.String()}
			lists[path] = list
			out[path] = list
			if r.GroupVersion.Group != "" {
				gv := metav1.GroupVersionForDiscovery{GroupVersion: r.GroupVersion.String(), Version: r.GroupVersion.Version}
				groups.Groups = append(groups.Groups, metav1.APIGroup{Name: r.GroupVersion.Group, Versions: []metav1.GroupVersionForDiscovery{gv}, PreferredVersion: gv})
			}
		}
		list.APIResources = append(list.APIResources, metav1.APIResource{
			Name: r.Name, SingularName: strings.ToLower(r.Kind), Namespaced: r.Namespaced, Kind: r.Kind, Verbs: r.Verbs,
		})
	}
	out["/apis"] = groups
	return out
}

// kubectl runs the kubectl on PATH against server with a throw-away
// kubeconfig and cache.
func kubectl(t *testing.T, server string, stdin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	path, lookErr := exec.LookPath("kubectl")
	if lookErr != nil {
		t.Skip("no kubectl on PATH")
	}
	dir := t.TempDir()
	config := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: " + server +
		"\ncontexts:\n- name: c\n  context:\n    cluster: c\n    namespace: default\ncurrent-context: c\n"
	if err := os.WriteFile(filepath.Join(dir, "kubeconfig"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, append([]string{"--kubeconfig", filepath.Join(dir, "kubeconfig"), "--cache-dir", filepath.Join(dir, "cache")}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+dir, "KUBECTL_KUBERC=false")
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

func newFakeAPIServer(t *testing.T) (*fakeAPIServer, *httptest.Server) {
	t.Helper()
	fake := &fakeAPIServer{openapi: newTestHandler(t), pods: map[string][]byte{}}
	server := httptest.NewServer(fake)
	t.Cleanup(server.Close)
	return fake, server
}

func TestKubectlBinaryExplain(t *testing.T) {
	_, server := newFakeAPIServer(t)
	out, errOut, err := kubectl(t, server.URL, "", "explain", "pods.spec.containers")
	if err != nil {
		t.Fatalf("kubectl explain: %v\n%s", err, errOut)
	}
	for _, want := range []string{"KIND:       Pod", "FIELD: containers <[]Container>", "image\t<string>", "name\t<string> -required-",
		// Descriptions come from the types' SwaggerDoc: the field's, the
		// item type's, and each field's below.
		"DESCRIPTION:\n    List of containers belonging to the pod.",
		"A single application container that you want to run within a pod.",
		"Container image name. More info:"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl explain pods.spec.containers lacks %q:\n%s", want, out)
		}
	}
	out, errOut, err = kubectl(t, server.URL, "", "explain", "deployments.spec.strategy")
	if err != nil || !strings.Contains(out, "GROUP:      apps") || !strings.Contains(out, "rollingUpdate\t<RollingUpdateDeployment>") {
		t.Errorf("kubectl explain deployments.spec.strategy: %v\n%s\n%s", err, out, errOut)
	}
}

const (
	podManifest = `apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  containers:
  - name: a
    image: nginx:1
`
	podManifestTwoContainers = podManifest + `  - name: b
    image: busybox:1
`
)

func TestKubectlBinaryApply(t *testing.T) {
	fake, server := newFakeAPIServer(t)

	// A manifest with an unknown field: had kubectl not found
	// fieldValidation in the documents, it would validate on its own and
	// refuse it; having found it, it leaves validation to the server (this
	// fake accepts anything).
	misspelt := strings.Replace(podManifest, "image:", "imagee:", 1)
	if _, errOut, err := kubectl(t, server.URL, misspelt, "apply", "--dry-run=server", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply --dry-run=server: %v\n%s", err, errOut)
	}
	if _, errOut, err := kubectl(t, server.URL, podManifest, "apply", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply (create): %v\n%s", err, errOut)
	}
	// A second container: kubectl computes a strategic merge patch from
	// the OpenAPI v3 document.
	_, errOut, err := kubectl(t, server.URL, podManifestTwoContainers, "apply", "-f", "-")
	if err != nil {
		t.Fatalf("kubectl apply (patch): %v\n%s", err, errOut)
	}
	if strings.Contains(errOut, "warning") {
		t.Errorf("kubectl warned: %s", errOut)
	}

	fake.mu.Lock()
	defer fake.mu.Unlock()
	if len(fake.writes) != 3 {
		t.Fatalf("writes = %+v", fake.writes)
	}
	dryRun, create, patch := fake.writes[0], fake.writes[1], fake.writes[2]
	if dryRun.method != http.MethodPost || !strings.Contains(dryRun.query, "dryRun=All") || !strings.Contains(dryRun.query, "fieldValidation=Strict") {
		t.Errorf("dry run: %s ?%s", dryRun.method, dryRun.query)
	}
	if create.method != http.MethodPost || !strings.Contains(create.query, "fieldValidation=Strict") {
		t.Errorf("create: %s ?%s", create.method, create.query)
	}
	if patch.method != http.MethodPatch || patch.contentType != "application/strategic-merge-patch+json" ||
		!strings.Contains(patch.query, "fieldValidation=Strict") ||
		!strings.Contains(patch.body, `"$setElementOrder/containers":[{"name":"a"},{"name":"b"}]`) {
		t.Errorf("patch: %s %s ?%s\n%s", patch.method, patch.contentType, patch.query, patch.body)
	}
	fetchedV3 := slices.ContainsFunc(fake.requests, func(r string) bool {
		return strings.HasPrefix(r, "GET /openapi/v3/api/v1?hash=")
	})
	if !fetchedV3 {
		t.Errorf("kubectl never fetched the api/v1 OpenAPI v3 document: %v", fake.requests)
	}
}
