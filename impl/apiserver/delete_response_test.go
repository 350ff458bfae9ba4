package apiserver_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
)

// TestDeleteResponsePerResource: the body of a delete that removes an
// object is what kube-apiserver's generic store answers for that
// resource. Resources whose store returns the deleted object (pods,
// services, serviceaccounts) answer with it, its resourceVersion the
// revision of the deletion (the one the DELETED watch event carries, not
// the object's last write); the others (configmaps, secrets) with a
// success Status naming the object (name, group, resource as kind, uid)
// and no revision.
func TestDeleteResponsePerResource(t *testing.T) {
	e := newEnv(t, nil)
	dyn, err := dynamic.NewForConfig(e.rest)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		resource   string
		body       string
		wantObject bool
	}{
		{"configmaps", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"data":{"k":"v"}}`, false},
		{"secrets", `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"x"},"stringData":{"k":"v"}}`, false},
		{"serviceaccounts", `{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"x"}}`, true},
		{"services", `{"apiVersion":"v1","kind":"Service","metadata":{"name":"x"},"spec":{"ports":[{"port":80}],"selector":{"app":"x"}}}`, true},
		{"pods", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x"},"spec":{"containers":[{"name":"c","image":"busybox"}]}}`, true},
	}
	for _, c := range cases {
		t.Run(c.resource, func(t *testing.T) {
			path := "/api/v1/namespaces/default/" + c.resource
			r := e.do("POST", path, []byte(c.body))
			if r.code != http.StatusCreated {
				t.Fatalf("create: %d %s", r.code, r.body)
			}
			var created metav1.PartialObjectMetadata
			if err := json.Unmarshal(r.body, &created); err != nil {
				t.Fatal(err)
			}
			w, err := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: c.resource}).Namespace("default").
				Watch(ctx(t), metav1.ListOptions{ResourceVersion: created.ResourceVersion, FieldSelector: "metadata.name=x"})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			r = e.do("DELETE", path+"/x", []byte(`{"kind":"DeleteOptions","apiVersion":"v1","gracePeriodSeconds":0}`))
			if r.code != http.StatusOK {
				t.Fatalf("delete: %d %s", r.code, r.body)
			}
			var deletedRV string
			timeout := time.After(10 * time.Second)
			for deletedRV == "" {
				select {
				case ev, ok := <-w.ResultChan():
					if !ok {
						t.Fatal("watch ended before the DELETED event")
					}
					if ev.Type == watch.Deleted {
						m, err := meta.Accessor(ev.Object)
						if err != nil {
							t.Fatal(err)
						}
						deletedRV = m.GetResourceVersion()
					}
				case <-timeout:
					t.Fatal("no DELETED event")
				}
			}
			if !c.wantObject {
				st := r.status(t)
				if st.Status != metav1.StatusSuccess || st.Details == nil || st.Details.Name != "x" || st.Details.Group != "" ||
					st.Details.Kind != c.resource || st.Details.UID != created.UID {
					t.Fatalf("delete status: %s", r.body)
				}
				return
			}
			var got metav1.PartialObjectMetadata
			if err := json.Unmarshal(r.body, &got); err != nil {
				t.Fatal(err)
			}
			if got.Kind == "Status" || got.Name != "x" || got.UID != created.UID {
				t.Fatalf("delete answered %s, want the deleted object", r.body)
			}
			cr, _ := strconv.ParseInt(created.ResourceVersion, 10, 64)
			dr, _ := strconv.ParseInt(got.ResourceVersion, 10, 64)
			if got.ResourceVersion != deletedRV || dr <= cr {
				t.Fatalf("deleted object has resourceVersion %s, want the deletion's revision %s (created at %s)", got.ResourceVersion, deletedRV, created.ResourceVersion)
			}
		})
	}
}

// TestDeleteCollectionAnswersTheListedItems: kube-apiserver's generic
// store answers a deletecollection with the list it read to find the
// objects (its resourceVersion, and each item as listed, at its last
// write's resourceVersion), not with the objects the deletions returned.
func TestDeleteCollectionAnswersTheListedItems(t *testing.T) {
	e := newEnv(t, nil)
	want := map[string]string{}
	for _, n := range []string{"a", "b"} {
		cm, err := e.cs.CoreV1().ConfigMaps("default").Create(ctx(t), configMap("", n, map[string]string{"k": n}), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want[n] = cm.ResourceVersion
	}
	r := e.do("DELETE", "/api/v1/namespaces/default/configmaps", nil)
	if r.code != http.StatusOK {
		t.Fatalf("deletecollection: %d %s", r.code, r.body)
	}
	var list corev1.ConfigMapList
	if err := json.Unmarshal(r.body, &list); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, it := range list.Items {
		got[it.Name] = it.ResourceVersion
	}
	if list.Kind != "ConfigMapList" || list.ResourceVersion == "" || len(got) != 2 || got["a"] != want["a"] || got["b"] != want["b"] {
		t.Fatalf("deletecollection answered list rv %q items %v, want the listed items %v and the list's resourceVersion: %s", list.ResourceVersion, got, want, r.body)
	}
	left, err := e.cs.CoreV1().ConfigMaps("default").List(ctx(t), metav1.ListOptions{})
	if err != nil || len(left.Items) != 0 {
		t.Fatalf("after deletecollection: %v %v", err, left.Items)
	}
}
