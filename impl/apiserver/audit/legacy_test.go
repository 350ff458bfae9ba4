package audit

import (
	"bytes"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestLegacyLogFormat: --audit-log-format=legacy writes kube-apiserver's
// one-line text form, with its placeholders for what an event lacks.
func TestLegacyLogFormat(t *testing.T) {
	received := metav1.NewMicroTime(time.Date(2026, 1, 2, 3, 4, 5, 600000000, time.UTC))
	full := &Event{AuditID: "id-1", Stage: StageResponseComplete, SourceIPs: []string{"10.0.0.1", "10.0.0.2"}, Verb: "create",
		User:             authnv1.UserInfo{Username: "alice", Groups: []string{"devs", "system:authenticated"}},
		ImpersonatedUser: &authnv1.UserInfo{Username: "bob", Groups: []string{"ops"}},
		UserAgent:        "kubectl/v1.37.0", ObjectRef: &ObjectReference{Resource: "pods", Namespace: "ns"},
		RequestURI: "/api/v1/namespaces/ns/pods", ResponseStatus: &metav1.Status{Code: 201}, RequestReceivedTimestamp: received}
	var buf bytes.Buffer
	b := &WriterBackend{w: &buf, format: FormatLegacy}
	if !b.ProcessEvent(full) {
		t.Fatal("not written")
	}
	want := `2026-01-02T03:04:05.6Z AUDIT: id="id-1" stage="ResponseComplete" ip="10.0.0.1" method="create" user="alice" groups="\"devs\",\"system:authenticated\"" as="bob" asgroups="\"ops\"" user-agent="kubectl/v1.37.0" namespace="ns" uri="/api/v1/namespaces/ns/pods" response="201"` + "\n"
	if buf.String() != want {
		t.Errorf("legacy line\n%s\nwant\n%s", buf.String(), want)
	}
	bare := &Event{AuditID: "id-2", Stage: StageRequestReceived, Verb: "get", RequestURI: "/version", RequestReceivedTimestamp: received,
		User: authnv1.UserInfo{Groups: []string{"ignored without a name"}}}
	want = `2026-01-02T03:04:05.6Z AUDIT: id="id-2" stage="RequestReceived" ip="<unknown>" method="get" user="<none>" groups="<none>" as="<self>" asgroups="<lookup>" user-agent="" namespace="<none>" uri="/version" response="<deferred>"`
	if got := legacyLine(bare); got != want {
		t.Errorf("legacy line\n%s\nwant\n%s", got, want)
	}
}
