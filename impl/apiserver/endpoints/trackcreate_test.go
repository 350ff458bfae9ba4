package endpoints

import (
	"net/http/httptest"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A create's managed fields are recorded over the handler's one empty
// object, not a new one per create, and that object stays empty.
func TestTrackCreateAllocations(t *testing.T) {
	h := configMapHandler(t, acceptingStore{})
	r := httptest.NewRequest("POST", "/api/v1/namespaces/ns/configmaps", nil)
	r.Header.Set("User-Agent", "creator")
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}, Data: map[string]string{"k": "v"}}
	track := func() {
		o := *obj
		out, err := h.trackCreate(r, &o)
		if err != nil {
			t.Fatal(err)
		}
		sinkObject = out
	}
	track()
	if got := sinkObject.(*corev1.ConfigMap).ManagedFields; len(got) != 1 || got[0].Manager != "creator" {
		t.Fatalf("managed fields %+v, want one entry of manager creator", got)
	}
	// The object's copy; the managed fields entry, its time and FieldsV1;
	// the kept FieldsV1 bytes' copy; the shape walk's path and its one
	// data entry's path element. A new empty live object per create would
	// be one more, reading the data map through reflect two more (copies
	// of the entry's key and value).
	if raceEnabled {
		t.Log("allocations not counted under the race detector")
	} else if n := testing.AllocsPerRun(100, track); n > 7 {
		t.Errorf("trackCreate allocates %v times, want 7", n)
	}
	if !reflect.DeepEqual(h.empty, &corev1.ConfigMap{}) {
		t.Errorf("the handler's empty object changed: %+v", h.empty)
	}
}
