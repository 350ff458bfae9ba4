package apiserver_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// TestEndpointSlicesServed: discovery.k8s.io/v1 endpointslices through
// client-go in JSON and protobuf — discovery, create with defaults,
// list by label, watch, patch, 422s with field paths, kubectl's table and
// deletecollection.
func TestEndpointSlicesServed(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)

	res, err := e.cs.Discovery().ServerResourcesForGroupVersion("discovery.k8s.io/v1")
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(res.APIResources, func(r metav1.APIResource) bool { return r.Name == "endpointslices" })
	if i < 0 || res.APIResources[i].Kind != "EndpointSlice" || !res.APIResources[i].Namespaced || !slices.Contains(res.APIResources[i].Verbs, "deletecollection") {
		t.Fatalf("discovery of discovery.k8s.io/v1: %+v", res.APIResources)
	}

	protoCfg := *e.rest
	protoCfg.ContentType = "application/vnd.kubernetes.protobuf"
	protoCS, err := kubernetes.NewForConfig(&protoCfg)
	if err != nil {
		t.Fatal(err)
	}
	sliceClient := e.cs.DiscoveryV1().EndpointSlices("default")
	w, err := sliceClient.Watch(c, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=web"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	port := int32(8080)
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{GenerateName: "web-", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.244.0.5"}}, {Addresses: []string{"10.244.0.6"}}},
		Ports:       []discoveryv1.EndpointPort{{Port: &port}},
	}
	created, err := protoCS.DiscoveryV1().EndpointSlices("default").Create(c, slice, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p := created.Ports[0]; p.Name == nil || *p.Name != "" || p.Protocol == nil || *p.Protocol != corev1.ProtocolTCP || created.Generation != 1 {
		t.Fatalf("created %+v", created)
	}
	select {
	case ev := <-w.ResultChan():
		if ev.Type != watch.Added || ev.Object.(*discoveryv1.EndpointSlice).Name != created.Name {
			t.Fatalf("watch event %v %v", ev.Type, ev.Object)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no watch event")
	}
	list, err := sliceClient.List(c, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=web"})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("list: %v %v", err, list)
	}

	patched, err := sliceClient.Patch(c, created.Name, types.MergePatchType, []byte(`{"endpoints":[{"addresses":["10.244.0.7"],"conditions":{"ready":false}}]}`), metav1.PatchOptions{})
	if err != nil || len(patched.Endpoints) != 1 || patched.Generation != 2 || *patched.Endpoints[0].Conditions.Ready {
		t.Fatalf("patch: %v %+v", err, patched)
	}

	// Invalid writes are 422s naming the fields.
	_, err = sliceClient.Patch(c, created.Name, types.MergePatchType, []byte(`{"addressType":"IPv6"}`), metav1.PatchOptions{})
	wantCauses(t, err, "addressType", "endpoints[0].addresses[0]")
	bad := slice.DeepCopy()
	icmp := corev1.Protocol("ICMP")
	bad.Endpoints = []discoveryv1.Endpoint{{Addresses: []string{"127.0.0.1"}}}
	bad.Ports[0].Protocol = &icmp
	_, err = sliceClient.Create(c, bad, metav1.CreateOptions{})
	wantCauses(t, err, "endpoints[0].addresses[0]", "ports[0].protocol")
	bad = slice.DeepCopy()
	bad.AddressType = ""
	_, err = sliceClient.Create(c, bad, metav1.CreateOptions{})
	wantCauses(t, err, "addressType")

	// A valid slice with an address not in canonical form is created with
	// a Warning header naming it.
	r := e.do("POST", "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices",
		[]byte(`{"metadata":{"name":"v6"},"addressType":"IPv6","endpoints":[{"addresses":["FD00:0::1"]}]}`))
	if r.code != http.StatusCreated || !strings.Contains(strings.Join(r.header.Values("Warning"), "\n"), `endpoints[0].addresses[0]: IPv6 address \"FD00:0::1\" should be in RFC 5952 canonical format (\"fd00::1\")`) {
		t.Fatalf("create with a non-canonical address: %d, warnings %q, %s", r.code, r.header.Values("Warning"), r.body)
	}

	// What kubectl get shows.
	r = e.do("GET", "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/"+created.Name, nil, "Accept", tableV1)
	var tbl metav1.Table
	if err := json.Unmarshal(r.body, &tbl); err != nil || r.code != http.StatusOK || len(tbl.Rows) != 1 {
		t.Fatalf("table: %d %v %s", r.code, err, r.body)
	}
	var names []string
	for _, col := range tbl.ColumnDefinitions {
		names = append(names, col.Name)
	}
	cells := tbl.Rows[0].Cells
	if !slices.Equal(names, []string{"Name", "AddressType", "Ports", "Endpoints", "Age"}) ||
		cells[1] != "IPv4" || cells[2] != "8080" || cells[3] != "10.244.0.7" {
		t.Fatalf("table columns %v cells %v", names, cells)
	}

	if err := sliceClient.DeleteCollection(c, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := sliceClient.Get(c, created.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("after deletecollection: %v", err)
	}
}

// wantCauses checks that err is a 422 whose causes are exactly fields.
func wantCauses(t *testing.T, err error, fields ...string) {
	t.Helper()
	if !apierrors.IsInvalid(err) {
		t.Fatalf("got %v, want 422", err)
	}
	var got []string
	for _, c := range err.(apierrors.APIStatus).Status().Details.Causes {
		got = append(got, c.Field)
	}
	slices.Sort(got)
	slices.Sort(fields)
	if !slices.Equal(got, fields) {
		t.Fatalf("causes %v, want %v (%v)", got, fields, err)
	}
}
