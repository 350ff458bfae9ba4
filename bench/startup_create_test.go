package bench

import (
	"context"
	"errors"
	"maps"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func TestCreateOutcome(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	tests := []struct {
		err     error
		unknown bool
		label   string
	}{
		{apierrors.NewInternalError(errors.New("etcdserver: request timed out")), true, "InternalError"},
		{apierrors.NewServerTimeout(pods, "create", 2), true, "ServerTimeout"},
		{apierrors.NewTimeoutError("request did not complete", 0), true, "Timeout"},
		{apierrors.NewTooManyRequests("slow down", 1), true, "TooManyRequests"},
		{apierrors.NewAlreadyExists(pods, "startup-1"), true, "AlreadyExists"},
		{apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "startup-1", nil), false, "Invalid"},
		{apierrors.NewForbidden(pods, "startup-1", errors.New("no")), false, "Forbidden"},
		{context.DeadlineExceeded, true, "transport"},
		{errors.New("something else"), false, "transport"},
	}
	for _, tt := range tests {
		unknown, label := createOutcome(tt.err)
		if unknown != tt.unknown || label != tt.label {
			t.Errorf("createOutcome(%v) = %v, %q; want %v, %q", tt.err, unknown, label, tt.unknown, tt.label)
		}
	}
}

// A create the server failed without a verdict is read back: counted
// created if it was stored, sent again if it was not; one refused with a
// verdict stops the run.
func TestCreateBenchPodSettlesUnknownOutcomes(t *testing.T) {
	timedOut := apierrors.NewInternalError(errors.New("etcdserver: request timed out"))
	tests := []struct {
		name string
		// answers are the server's answers to successive creates: nil
		// stores the pod, storeAndFail stores it and answers the error.
		answers    []error
		storeFirst []bool
		wantErr    bool
		wantCounts map[string]int
		wantSends  int
	}{
		{name: "plain", answers: []error{nil}, wantSends: 1},
		{name: "stored despite 500", answers: []error{timedOut}, storeFirst: []bool{true},
			wantCounts: map[string]int{"InternalError, stored": 1}, wantSends: 1},
		{name: "not stored, sent again", answers: []error{timedOut, nil}, storeFirst: []bool{false},
			wantCounts: map[string]int{"InternalError, not stored, sent again": 1}, wantSends: 2},
		{name: "own retry already stored it", answers: []error{apierrors.NewAlreadyExists(schema.GroupResource{Resource: "pods"}, "p")}, storeFirst: []bool{true},
			wantCounts: map[string]int{"AlreadyExists, stored": 1}, wantSends: 1},
		{name: "invalid stops the run", answers: []error{apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "p", nil)}, storeFirst: []bool{false},
			wantErr: true, wantSends: 1},
		{name: "gives up", answers: []error{timedOut, timedOut, timedOut, timedOut, timedOut}, storeFirst: []bool{false, false, false, false, false},
			wantErr: true, wantCounts: map[string]int{"InternalError, not stored, sent again": maxCreateAttempts}, wantSends: maxCreateAttempts},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := fake.NewClientset()
			sends := 0
			cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
				i := sends
				sends++
				if i >= len(tt.answers) {
					t.Fatalf("create %d not expected", sends)
				}
				if tt.answers[i] == nil {
					return false, nil, nil // the tracker stores it
				}
				if i < len(tt.storeFirst) && tt.storeFirst[i] {
					obj := a.(k8stesting.CreateAction).GetObject()
					if err := cs.Tracker().Create(schema.GroupVersionResource{Version: "v1", Resource: "pods"}, obj, "ns"); err != nil {
						t.Fatal(err)
					}
				}
				return true, nil, tt.answers[i]
			})
			tr := newStartupTracker()
			err := createBenchPod(context.Background(), cs, "ns", "startup-1", tr)
			if (err != nil) != tt.wantErr {
				t.Fatalf("createBenchPod: %v, want error %v", err, tt.wantErr)
			}
			if sends != tt.wantSends {
				t.Errorf("%d creates sent, want %d", sends, tt.wantSends)
			}
			if got := tr.settledCreates(); !maps.Equal(got, tt.wantCounts) {
				t.Errorf("counts %v, want %v", got, tt.wantCounts)
			}
			if !tt.wantErr {
				if _, err := cs.CoreV1().Pods("ns").Get(context.Background(), "startup-1", metav1.GetOptions{}); err != nil {
					t.Errorf("pod not stored: %v", err)
				}
			}
		})
	}
}
