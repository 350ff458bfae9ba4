package deployment

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
)

// TestCreateErrorWithoutProgressDeadline: a failed new-ReplicaSet create
// sets Progressing ReplicaSetCreateError only when the Deployment has a
// progress deadline, as upstream (HasProgressDeadline: set and not
// MaxInt32); the Warning event is recorded either way, after the status.
func TestCreateErrorWithoutProgressDeadline(t *testing.T) {
	for _, tt := range []struct {
		name     string
		deadline int32
		want     bool
	}{{"deadline 600s", 600, true}, {"no deadline (MaxInt32)", math.MaxInt32, false}} {
		t.Run(tt.name, func(t *testing.T) {
			d := newDeployment(3, "nginx", intstr.FromString("25%"), intstr.FromString("25%"))
			d.Spec.ProgressDeadlineSeconds = ptr(tt.deadline)
			client := newClientset(d)
			client.PrependReactor("create", "replicasets", func(k8stesting.Action) (bool, runtime.Object, error) {
				return true, nil, errors.New("admission webhook denied")
			})
			factory := informers.NewSharedInformerFactory(client, 0)
			recorder := record.NewFakeRecorder(100)
			dc := New(client, factory.Apps().V1().Deployments(), factory.Apps().V1().ReplicaSets(), factory.Core().V1().Pods(), recorder, clock.RealClock{})
			ctx, cancel := context.WithCancel(context.Background())
			factory.Start(ctx.Done())
			var wg sync.WaitGroup
			wg.Add(1)
			go func() { defer wg.Done(); _ = dc.Run(ctx, 1) }()
			defer func() { cancel(); wg.Wait(); factory.Shutdown() }()

			e := <-recorder.Events
			if !strings.Contains(e, "Warning "+ReasonReplicaSetCreateError+` Failed to create new replica set "web-`) {
				t.Fatalf("event %q", e)
			}
			got, err := client.AppsV1().Deployments("ns").Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			c := getCondition(got.Status, appsv1.DeploymentProgressing)
			if has := c != nil && c.Reason == ReasonReplicaSetCreateError; has != tt.want {
				t.Fatalf("Progressing %+v, want a ReplicaSetCreateError condition: %v", c, tt.want)
			}
		})
	}
}
