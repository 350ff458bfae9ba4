package apiserver_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver"
	"github.com/kubeproof/kubeproof/impl/apiserver/audit"
	"github.com/kubeproof/kubeproof/impl/storage/storagebackend"
)

// TestServiceAllocationRepair: when the ClusterIP allocation records lose
// what services hold (here deleted from etcd behind the server's back), the
// repair loop records it again and says so with a ClusterIPNotAllocated
// Warning event on each service, as kube-apiserver's repair controller; a
// new service cannot then take a repaired address. The event is an
// events.k8s.io/v1 create of the server's loopback client, as the
// recorder of kube-apiserver's repair controllers makes it: audited as
// system:apiserver, managedFields under kube-apiserver.
func TestServiceAllocationRepair(t *testing.T) {
	prefix := fmt.Sprintf("/test-repair%d-%d", time.Now().UnixNano(), prefixSeq.Add(1))
	factory := storagebackend.NewFactory(storagebackend.Config{Client: etcdServer.Client(), Prefix: prefix})
	t.Cleanup(factory.Close)
	b := &auditEvents{evs: map[string][]*audit.Event{}}
	policy, err := audit.ParsePolicy([]byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n  resources:\n  - group: events.k8s.io\n"))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(c *apiserver.Config) {
		c.AuditPolicy, c.AuditBackend = policy, b
		c.StorageFactory = factory
		c.ServiceClusterIPRange = "10.0.0.0/28"
		c.ServiceRepairInterval = 20 * time.Millisecond
	})
	ctx := context.Background()
	svcs := e.cs.CoreV1().Services("default")
	x, err := svcs.Create(ctx, newService("x", corev1.ServiceTypeClusterIP, "", 0), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := etcdServer.Client().Delete(ctx, prefix+"/ranges/serviceips/", clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		evs, err := e.cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var found *corev1.Event
		for i := range evs.Items {
			if ev := &evs.Items[i]; ev.Reason == "ClusterIPNotAllocated" && ev.InvolvedObject.Name == "x" {
				found = ev
			}
		}
		if found != nil {
			if found.Type != corev1.EventTypeWarning || found.ReportingController != "ipallocator-repair-controller" ||
				found.InvolvedObject.UID != x.UID || !strings.Contains(found.Message, x.Spec.ClusterIP) {
				t.Fatalf("repair event: %+v", found)
			}
			if mf := found.ManagedFields; len(mf) != 1 || mf[0].Manager != "kube-apiserver" || mf[0].APIVersion != "events.k8s.io/v1" ||
				mf[0].Operation != metav1.ManagedFieldsOperationUpdate {
				t.Errorf("repair event managedFields: %+v, want kube-apiserver's events.k8s.io/v1 update", mf)
			}
			if ev := b.find("create", "/apis/events.k8s.io/v1/namespaces/default/events", found.Name); ev == nil {
				t.Errorf("no audit event of the repair event's create at events.k8s.io/v1")
			} else if ev.User.Username != "system:apiserver" || ev.ResponseStatus == nil || ev.ResponseStatus.Code != 201 {
				t.Errorf("repair event create audited as %+v, answered %+v; want system:apiserver, 201", ev.User, ev.ResponseStatus)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no ClusterIPNotAllocated event for service x")
		}
		time.Sleep(20 * time.Millisecond)
	}
	_, err = svcs.Create(ctx, newService("y", corev1.ServiceTypeClusterIP, x.Spec.ClusterIP, 0), metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "provided IP is already allocated") {
		t.Fatalf("create with x's repaired address: %v, want 422 provided IP is already allocated", err)
	}
}
