package endpoints_test

import (
	"context"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/kubeproof/kubeproof/impl/cluster/clustertest"
)

func uidTestSpec(name string) (metav1.ObjectMeta, *metav1.LabelSelector, corev1.PodTemplateSpec) {
	labels := map[string]string{"app": name}
	return metav1.ObjectMeta{Name: name}, &metav1.LabelSelector{MatchLabels: labels},
		corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}
}

// storagePrecondition is kube-apiserver's 409 message for a PUT whose uid
// is not the stored object's.
func storagePrecondition(gr, name, key string, sent, stored types.UID) string {
	return fmt.Sprintf(`Operation cannot be fulfilled on %s %q: StorageError: invalid object, Code: 4, Key: %s, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: %s, UID in object meta: %s`, gr, name, key, sent, stored)
}

// TestScaleUIDPrecondition: the /scale subresource of deployments and
// replicasets takes the Scale's metadata.uid as a precondition, as
// kube-apiserver: a PUT with another uid is its storage's 409 (checked
// before the resourceVersion, which is stale here too), a patch setting
// another uid the scale 409 on deployments/scale.apps; neither changes the
// replicas. The right uid scales.
func TestScaleUIDPrecondition(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API server")
	}
	_, client := clustertest.Start(t, clustertest.Options{})
	ctx := context.Background()
	meta, sel, tmpl := uidTestSpec("d")
	d, err := client.AppsV1().Deployments("default").Create(ctx, &appsv1.Deployment{ObjectMeta: meta,
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: sel, Template: tmpl}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	meta, sel, tmpl = uidTestSpec("rs")
	rs, err := client.AppsV1().ReplicaSets("default").Create(ctx, &appsv1.ReplicaSet{ObjectMeta: meta,
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](1), Selector: sel, Template: tmpl}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	type scaler struct {
		gr, key string
		uid     types.UID
		get     func() (int32, error)
		put     func(uid types.UID, rv string, replicas int32) error
		patch   func(body string) error
	}
	for name, s := range map[string]scaler{
		"deployment": {"deployments.apps", "/registry/deployments/default/d", d.UID,
			func() (int32, error) {
				s, err := client.AppsV1().Deployments("default").GetScale(ctx, "d", metav1.GetOptions{})
				return s.Spec.Replicas, err
			},
			func(uid types.UID, rv string, replicas int32) error {
				s, err := client.AppsV1().Deployments("default").GetScale(ctx, "d", metav1.GetOptions{})
				if err != nil {
					return err
				}
				s.UID, s.Spec.Replicas = uid, replicas
				if rv != "" {
					s.ResourceVersion = rv
				}
				_, err = client.AppsV1().Deployments("default").UpdateScale(ctx, "d", s, metav1.UpdateOptions{})
				return err
			},
			func(body string) error {
				_, err := client.AppsV1().Deployments("default").Patch(ctx, "d", types.MergePatchType, []byte(body), metav1.PatchOptions{}, "scale")
				return err
			}},
		"replicaset": {"replicasets.apps", "/registry/replicasets/default/rs", rs.UID,
			func() (int32, error) {
				s, err := client.AppsV1().ReplicaSets("default").GetScale(ctx, "rs", metav1.GetOptions{})
				return s.Spec.Replicas, err
			},
			func(uid types.UID, rv string, replicas int32) error {
				s, err := client.AppsV1().ReplicaSets("default").GetScale(ctx, "rs", metav1.GetOptions{})
				if err != nil {
					return err
				}
				s.UID, s.Spec.Replicas = uid, replicas
				if rv != "" {
					s.ResourceVersion = rv
				}
				_, err = client.AppsV1().ReplicaSets("default").UpdateScale(ctx, "rs", s, metav1.UpdateOptions{})
				return err
			},
			func(body string) error {
				_, err := client.AppsV1().ReplicaSets("default").Patch(ctx, "rs", types.MergePatchType, []byte(body), metav1.PatchOptions{}, "scale")
				return err
			}},
	} {
		t.Run(name, func(t *testing.T) {
			objName := s.key[len("/registry/"+s.gr[:len(s.gr)-len(".apps")]+"/default/"):]
			err := s.put("not-the-uid", "1", 3)
			if want := storagePrecondition(s.gr, objName, s.key, "not-the-uid", s.uid); !apierrors.IsConflict(err) || err.Error() != want {
				t.Errorf("PUT with another uid and a stale resourceVersion: %v, want 409 %q", err, want)
			}
			err = s.patch(`{"metadata":{"uid":"not-the-uid"},"spec":{"replicas":3}}`)
			// The group resource is <resource>/scale in apps, which a
			// Status names "<resource>/scale.apps".
			if want := fmt.Sprintf(`Operation cannot be fulfilled on %s/scale.apps %q: Precondition failed: UID in precondition: not-the-uid, UID in object meta: %s`, s.gr[:len(s.gr)-len(".apps")], objName, s.uid); !apierrors.IsConflict(err) || err.Error() != want {
				t.Errorf("patch setting another uid: %v, want 409 %q", err, want)
			}
			if got, err := s.get(); err != nil || got != 1 {
				t.Errorf("replicas %d (%v) after the refused updates, want 1", got, err)
			}
			if err := s.put(s.uid, "", 2); err != nil {
				t.Fatalf("PUT with the object's uid: %v", err)
			}
			if err := s.patch(fmt.Sprintf(`{"metadata":{"uid":%q},"spec":{"replicas":4}}`, s.uid)); err != nil {
				t.Fatalf("patch with the object's uid: %v", err)
			}
			if got, err := s.get(); err != nil || got != 4 {
				t.Errorf("replicas %d (%v), want 4", got, err)
			}
		})
	}
}
