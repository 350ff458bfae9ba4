package audit

import (
	"net/http"
	"net/http/httptest"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSelectedNameInObjectRefAndPolicy: a list or watch by a metadata.name
// field selector is named by it in the audit, as kube-apiserver's (its
// audit reads the request info, whose parser names such a list): the
// objectRef's name is the selected one and a rule's resourceNames match
// it. The path's list without a selector names nothing.
func TestSelectedNameInObjectRefAndPolicy(t *testing.T) {
	ok := func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) }
	p := &Policy{TypeMeta: metav1.TypeMeta{APIVersion: APIVersion, Kind: PolicyKind}, Rules: []PolicyRule{
		{Level: LevelRequest, Resources: []GroupResources{{Resources: []string{"secrets"}, ResourceNames: []string{"s"}}}},
		{Level: LevelMetadata},
	}}
	for url, want := range map[string]struct {
		name  string
		level Level
	}{
		"/api/v1/namespaces/ns/secrets?fieldSelector=metadata.name%3Ds":         {"s", LevelRequest},
		"/api/v1/namespaces/ns/secrets?fieldSelector=metadata.name%3Ds&watch=1": {"s", LevelRequest},
		"/api/v1/namespaces/ns/secrets?fieldSelector=metadata.name%3Dt":         {"t", LevelMetadata},
		"/api/v1/namespaces/ns/secrets?fieldSelector=metadata.name%21%3Ds":      {"", LevelMetadata},
		"/api/v1/namespaces/ns/secrets":                                         {"", LevelMetadata},
	} {
		events, _ := serve(t, p, httptest.NewRequest(http.MethodGet, url, nil), ok)
		if len(events) == 0 {
			t.Errorf("%s: no events", url)
			continue
		}
		ev := events[len(events)-1]
		if ev.ObjectRef == nil || ev.ObjectRef.Name != want.name || ev.Level != want.level {
			t.Errorf("%s: objectRef %+v level %s, want name %q level %s", url, ev.ObjectRef, ev.Level, want.name, want.level)
		}
	}
}
