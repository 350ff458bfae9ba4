package eventsink

import (
	"strings"
	"testing"
	"unsafe"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// An observation gives back exactly the name and resourceVersion it saw,
// kept compactly (as the object's name and two numbers) only when they
// are client-go's event name of the object and a canonical decimal.
func TestObservationGivesBackWhatItSaw(t *testing.T) {
	for _, tc := range []struct {
		obj, name, rv string
		compact       bool
	}{
		{"web-0", "web-0.187a3f2c1b2d3e4f", "123", true},
		{"web-0", "web-0.187a3f2c1b2d3e4f", "", true},
		{"web-0", "web-0.0", "0", true},
		{"web-0", "web-0.ffffffffffffffff", "18446744073709551614", true},
		{"web-0", "web-0.ffffffffffffffff", "18446744073709551615", false}, // rv+1 overflows
		{"web-0", "web-0.10000000000000000", "1", false},                   // over 64 bits
		{"web-0", "web-0.0abc", "1", false},                                // a leading zero
		{"web-0", "web-0.ABC", "1", false},                                 // uppercase
		{"web-0", "web-0.", "1", false},
		{"web-0", "web-0.1a.2", "1", false},
		{"web-0", "web-0x1a", "1", false},
		{"web-0", "web-1.1a", "1", false},
		{"web-0", "web-0.1a", "007", false},
		{"web-0", "web-0.1a", "-1", false},
		{"web-0", "web-0.1a", "+1", false},
		{"web-0", "web-0.1a", "abc", false},
		{"", ".1a", "5", true},
		{"web-0", "custom-name", "5", false},
	} {
		ev := &v1.Event{ObjectMeta: metav1.ObjectMeta{Name: tc.name, ResourceVersion: tc.rv},
			InvolvedObject: v1.ObjectReference{Name: tc.obj}, Count: 3}
		o := observed(ev, observation{})
		if o.name() != tc.name || o.resourceVersion() != tc.rv || o.count != 3 {
			t.Errorf("%q of %q at %q: gives back %q at %q, count %d", tc.name, tc.obj, tc.rv, o.name(), o.resourceVersion(), o.count)
		}
		if o.compact != tc.compact {
			t.Errorf("%q of %q at %q: compact %v, want %v", tc.name, tc.obj, tc.rv, o.compact, tc.compact)
		}
	}
}

// A compact observation holds no string of its own: the object's name is
// the event's, or a previous observation's equal one (the server's answer
// then keeps no copy of its own).
func TestObservationSharesTheObjectName(t *testing.T) {
	pod := strings.Clone("web-0")
	sent := &v1.Event{ObjectMeta: metav1.ObjectMeta{Name: pod + ".187a3f2c1b2d3e4f"}, InvolvedObject: v1.ObjectReference{Name: pod}}
	before := observed(sent, observation{})
	if !before.compact || unsafe.StringData(before.str) != unsafe.StringData(pod) {
		t.Fatal("the observation of a sent event does not share its object's name")
	}
	answer := sent.DeepCopy()
	answer.Name, answer.InvolvedObject.Name, answer.ResourceVersion = strings.Clone(sent.Name), strings.Clone(pod), "42"
	after := observed(answer, before)
	if !after.compact || unsafe.StringData(after.str) != unsafe.StringData(pod) {
		t.Error("the observation of the answer keeps the answer's copy of the object's name")
	}
	if after.name() != sent.Name || after.resourceVersion() != "42" {
		t.Errorf("answer observed as %q at %q", after.name(), after.resourceVersion())
	}
	other := answer.DeepCopy()
	other.InvolvedObject.Name, other.Name = "web-1", "web-1.1"
	if o := observed(other, before); o.str != "web-1" || o.name() != "web-1.1" {
		t.Errorf("another object's event observed as %q of %q", o.name(), o.str)
	}
}
