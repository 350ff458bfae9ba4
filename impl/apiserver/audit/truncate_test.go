package audit

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestTruncateEvents: with truncation on, an event larger than the max
// event size loses its request and response objects (annotated
// audit.k8s.io/truncated: "true") when its level records them; one still
// too large, or a Metadata one, is dropped as a plugin "truncate" error
// without failing the request; small events pass as they are.
func TestTruncateEvents(t *testing.T) {
	mem := &memBackend{}
	m := NewMetrics()
	b := wrapTruncate(mem, TruncateConfig{Enabled: true, MaxEventSize: 300, MaxBatchSize: 1000}, m)
	big := json.RawMessage(`{"data":"` + strings.Repeat("x", 400) + `"}`)
	small := &Event{AuditID: "small", Level: LevelRequestResponse, RequestObject: json.RawMessage(`{}`)}
	bodies := &Event{AuditID: "bodies", Level: LevelRequest, RequestObject: big, Annotations: map[string]string{"a": "b"}}
	metadata := &Event{AuditID: "metadata", Level: LevelMetadata, RequestURI: "/" + strings.Repeat("u", 400)}
	for _, ev := range []*Event{small, bodies, metadata} {
		if !b.ProcessEvent(ev) {
			t.Errorf("%s failed the request", ev.AuditID)
		}
	}
	if len(mem.events) != 2 || mem.events[0] != small {
		t.Fatalf("sent %d events", len(mem.events))
	}
	cut := mem.events[1]
	if cut.AuditID != "bodies" || cut.RequestObject != nil || cut.Annotations[TruncatedAnnotation] != "true" || cut.Annotations["a"] != "b" {
		t.Errorf("truncated event %+v", cut)
	}
	if bodies.RequestObject == nil || len(bodies.Annotations) != 1 {
		t.Error("the original event was changed")
	}
	if n := counterValue(t, m.errors.WithLabelValues(PluginTruncate)); n != 1 {
		t.Errorf("apiserver_audit_error_total{plugin=truncate} = %v, want 1", n)
	}
	if wrapTruncate(mem, TruncateConfig{MaxEventSize: 1}, nil) != Backend(mem) {
		t.Error("disabled truncation wrapped the backend")
	}
	for _, tc := range []struct {
		c    TruncateConfig
		want string
	}{
		{TruncateConfig{MaxEventSize: 0, MaxBatchSize: 10}, "invalid audit truncate log max event size 0, must be a positive number"},
		{TruncateConfig{MaxEventSize: 10, MaxBatchSize: 5}, "invalid audit truncate log max batch size 5, must be greater than max event size (10)"},
	} {
		o := DefaultLogOptions()
		o.Path, o.Truncate = "/x", tc.c
		if errs := o.Validate(); len(errs) != 1 || errs[0].Error() != tc.want {
			t.Errorf("%+v: %v, want %s", tc.c, errs, tc.want)
		}
	}
}
