package reqlatency

import (
	"context"
	"maps"
	"testing"
	"time"
)

// TestAnnotations: only the layers that took time are annotated, in
// time.Duration notation, sums of what was added; a nil Trackers (a
// request not tracked) records nothing and annotates nothing.
func TestAnnotations(t *testing.T) {
	ctx, tr := With(context.Background())
	if From(ctx) != tr {
		t.Fatal("From does not return the Trackers With added")
	}
	if got := tr.Annotations(); len(got) != 0 {
		t.Errorf("nothing tracked: %v", got)
	}
	tr.AddEtcd(300 * time.Millisecond)
	tr.AddEtcd(1203 * time.Millisecond)
	if got, want := tr.Annotations(), map[string]string{EtcdKey: "1.503s"}; !maps.Equal(got, want) {
		t.Errorf("etcd only: %v, want %v", got, want)
	}
	tr.AddResponseWrite(12400 * time.Microsecond)
	tr.AddSerialize(2 * time.Millisecond)
	tr.AddSerialize(time.Millisecond)
	tr.AddTransform(40 * time.Microsecond)
	tr.AddDecode(time.Microsecond)
	tr.AddDecode(time.Microsecond)
	if got, want := tr.Annotations(), map[string]string{EtcdKey: "1.503s", ResponseWriteKey: "12.4ms", SerializeKey: "3ms",
		TransformKey: "40µs", DecodeKey: "2µs"}; !maps.Equal(got, want) {
		t.Errorf("etcd and write: %v, want %v", got, want)
	}
	var none *Trackers
	none.AddEtcd(time.Second)
	if From(context.Background()) != nil || len(none.Annotations()) != 0 {
		t.Error("an untracked request has trackers or annotations")
	}
}
