package fieldmanager

import (
	"bytes"
	"fmt"
	"math/rand"
	"reflect"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	"k8s.io/apimachinery/pkg/api/meta"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
	"sigs.k8s.io/structured-merge-diff/v6/value"

	"github.com/kubeproof/kubeproof/impl/registry"
)

// The direct road finds exactly the set structured-merge-diff's Compare
// of the empty object with the object finds (before any field is reset or
// stripped), and answers only for objects that pass its validation. Every
// served kind, random objects filled densely and sparsely (most fields
// left at, or put back to, their zero values; empty maps, slices and
// strings), and the edge cases structured-merge-diff treats specially.
func TestDirectFieldsMatchCompare(t *testing.T) {
	const perKind = 300
	for _, res := range registry.All() {
		gvk := res.GroupVersionKind()
		t.Run(gvk.String(), func(t *testing.T) {
			m := managerFor(t, gvk, "")
			if m.create == nil || m.create.direct == nil {
				t.Skip("no direct road for this kind")
			}
			r := rand.New(rand.NewSource(int64(len(gvk.String()))))
			dense := fuzzer.FuzzerFor(metafuzzer.Funcs, rand.NewSource(11), scheme.Codecs).NilChance(0.3).NumElements(0, 3)
			sparse := fuzzer.FuzzerFor(metafuzzer.Funcs, rand.NewSource(13), scheme.Codecs).NilChance(0.8).NumElements(0, 2)
			direct, withLists := 0, 0
			for i := 0; i < perKind; i++ {
				obj := res.New()
				switch i % 3 {
				case 0:
					dense.Fill(obj)
				case 1:
					sparse.Fill(obj)
					thin(r, reflect.ValueOf(obj).Elem(), 0)
				default:
					sparse.Fill(obj)
					thin(r, reflect.ValueOf(obj).Elem(), 0)
					res.Strategy.Default(obj)
				}
				if checkDirect(t, m, obj) {
					direct++
					if hasList(reflect.ValueOf(obj), 0) {
						withLists++
					}
				}
			}
			t.Logf("%d of %d objects took the direct road, %d of them with a non-empty list", direct, perKind, withLists)
			if direct == 0 {
				t.Error("no object took the direct road")
			}
			switch gvk.Kind {
			case "Pod", "Deployment", "ReplicaSet":
				if withLists < perKind/2 {
					t.Errorf("only %d objects with lists took the direct road", withLists)
				}
			}
		})
	}
}

// Edge cases of ConfigMaps, Secrets and Pods: empty and nil maps, empty
// keys and values, pointers to zero values, empty byte strings.
func TestDirectFieldsEdgeCases(t *testing.T) {
	f := false
	zero := int64(0)
	cases := []runtime.Object{
		&corev1.ConfigMap{},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}},
		&corev1.ConfigMap{Data: map[string]string{}},
		&corev1.ConfigMap{Data: map[string]string{"": ""}},
		&corev1.ConfigMap{Data: map[string]string{"k": ""}, BinaryData: map[string][]byte{"a": nil, "b": {}, "c": {1}}},
		&corev1.ConfigMap{Immutable: &f},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{}, Annotations: map[string]string{"": "x"}}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.Now(), DeletionGracePeriodSeconds: &zero}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Finalizers: []string{}}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Finalizers: []string{"a", "a"}}},
		&corev1.Secret{Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"k": nil}, StringData: map[string]string{}},
		&corev1.Pod{},
		&corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{}}},
		&corev1.Pod{Spec: corev1.PodSpec{SecurityContext: &corev1.PodSecurityContext{}, NodeSelector: map[string]string{}}},
		&corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending}},
		&corev1.Namespace{Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{}}},
	}
	managers := map[reflect.Type]*Manager{}
	for _, res := range registry.All() {
		if res.GroupVersion == corev1.SchemeGroupVersion {
			managers[reflect.TypeOf(res.New())] = managerFor(t, res.GroupVersionKind(), "")
		}
	}
	for _, obj := range cases {
		m := managers[reflect.TypeOf(obj)]
		if m == nil {
			t.Fatalf("no manager for %T", obj)
		}
		checkDirect(t, m, obj)
	}
	// Atomic structs and maps (an event's involvedObject, a pod's
	// nodeSelector) are one leaf each: the direct road answers for them.
	for _, obj := range []runtime.Object{
		&corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "ns"}, Reason: "Started", Count: 1,
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "p", FieldPath: "spec.containers{app}"},
			Source:         corev1.EventSource{Component: "kubelet", Host: "node-1"}, FirstTimestamp: metav1.Now()},
		&corev1.Pod{Spec: corev1.PodSpec{NodeSelector: map[string]string{"disk": "ssd"}}},
	} {
		if !checkDirect(t, managers[reflect.TypeOf(obj)], obj) {
			t.Errorf("%T with an atomic field does not take the direct road", obj)
		}
	}
	// The plainest ConfigMap takes the direct road.
	m := managers[reflect.TypeOf(&corev1.ConfigMap{})]
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Labels: map[string]string{"a": "b"}}, Data: map[string]string{"payload": "x"}}
	set, ok := m.create.direct.fields(reflect.ValueOf(cm))
	if !ok {
		t.Fatal("a plain ConfigMap does not take the direct road")
	}
	raw, _ := m.create.owned(set).ToJSON()
	if want := `{"f:data":{".":{},"f:payload":{}},"f:metadata":{"f:labels":{".":{},"f:a":{}}}}`; string(raw) != want {
		t.Errorf("fields %s, want %s", raw, want)
	}
}

// Lists as their schemas describe them: associative lists with one key
// (containers by name) and two (ports by containerPort and protocol, the
// protocol's schema default standing in when it is omitted), keys that are
// empty strings or zero numbers, nested lists (containers[].ports[],
// volumeMounts), env with valueFrom (an atomic struct inside), sets of
// strings (finalizers), atomic lists of strings and of structs (args,
// tolerations, a projected volume's sources), lists of one element and
// empty lists. Duplicate keys, and elements with no key and no default,
// take structured-merge-diff's road.
func TestDirectFieldsLists(t *testing.T) {
	managers := map[reflect.Type]*Manager{}
	for _, res := range registry.All() {
		managers[reflect.TypeOf(res.New())] = managerFor(t, res.GroupVersionKind(), "")
	}
	c := func(name string, mods ...func(*corev1.Container)) corev1.Container {
		ctr := corev1.Container{Name: name, Image: "img"}
		for _, m := range mods {
			m(&ctr)
		}
		return ctr
	}
	ports := func(ps ...corev1.ContainerPort) func(*corev1.Container) {
		return func(c *corev1.Container) { c.Ports = ps }
	}
	pod := func(ctrs ...corev1.Container) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: corev1.PodSpec{Containers: ctrs}}
	}
	seconds := int64(300)
	mode := int32(420)
	cases := []struct {
		name   string
		obj    runtime.Object
		direct bool
	}{
		{"one container", pod(c("app")), true},
		{"containers keyed by name", pod(c("b"), c("a"), c("c")), true},
		{"a container with an empty name", pod(c("")), true},
		{"empty containers", pod(), true},
		{"ports keyed by port and protocol", pod(c("a", ports(
			corev1.ContainerPort{ContainerPort: 80, Protocol: corev1.ProtocolTCP},
			corev1.ContainerPort{ContainerPort: 80, Protocol: corev1.ProtocolUDP, Name: "dns"},
			corev1.ContainerPort{ContainerPort: 0}))), true},
		{"a port without protocol (defaulted key)", pod(c("a", ports(corev1.ContainerPort{ContainerPort: 8080}))), true},
		{"a defaulted protocol equal to another port's", pod(c("a", ports(
			corev1.ContainerPort{ContainerPort: 53},
			corev1.ContainerPort{ContainerPort: 53, Protocol: corev1.ProtocolTCP}))), false},
		{"duplicate container names", pod(c("a"), c("a")), false},
		{"duplicate container names among nine", pod(c("1"), c("2"), c("3"), c("4"), c("5"), c("6"), c("7"), c("8"), c("4")), false},
		{"nine containers", pod(c("1"), c("2"), c("3"), c("4"), c("5"), c("6"), c("7"), c("8"), c("9")), true},
		{"env with valueFrom", pod(c("a", func(c *corev1.Container) {
			c.Env = []corev1.EnvVar{
				{Name: "X", Value: "1"},
				{Name: "NS", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
				{Name: "EMPTY"},
			}
		})), true},
		{"duplicate env", pod(c("a", func(c *corev1.Container) { c.Env = []corev1.EnvVar{{Name: "X"}, {Name: "X", Value: "2"}} })), false},
		{"atomic args and command", pod(c("a", func(c *corev1.Container) {
			c.Command, c.Args = []string{"sh", "-c"}, []string{"x", "x", ""}
		})), true},
		{"volume mounts keyed by mount path", pod(c("a", func(c *corev1.Container) {
			c.VolumeMounts = []corev1.VolumeMount{{Name: "v", MountPath: "/a", ReadOnly: true}, {Name: "v", MountPath: "/b"}}
		})), true},
		{"an image pull secret without name (defaulted key)", &corev1.Pod{Spec: corev1.PodSpec{ImagePullSecrets: []corev1.LocalObjectReference{{}}}}, true},
		{"a topology constraint with empty keys", &corev1.Pod{Spec: corev1.PodSpec{TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1}}}}, true},
		{"topology constraints keyed by two fields", &corev1.Pod{Spec: corev1.PodSpec{TopologySpreadConstraints: []corev1.TopologySpreadConstraint{
			{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: corev1.DoNotSchedule},
			{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: corev1.ScheduleAnyway},
			{MaxSkew: 2, TopologyKey: "host"}}}}, true},
		{"atomic tolerations, duplicates too", &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{c("a")}, Tolerations: []corev1.Toleration{
			{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &seconds},
			{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &seconds},
			{}}}}, true},
		{"a projected volume (atomic lists holding atomic structs)", &corev1.Pod{Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "kube-api-access-x",
			VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{DefaultMode: &mode, Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: &seconds}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
				{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
			}}}}}}}, true},
		{"a set of strings", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Finalizers: []string{"b", "a", ""}}}, true},
		{"a set of one string", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Finalizers: []string{"a"}}}, true},
		{"a set with a duplicate", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Finalizers: []string{"a", "b", "a"}}}, false},
		{"owner references keyed by uid", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{
			{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "u1"}, {UID: "u2"}}}}, true},
		{"service ports keyed by port and protocol", &corev1.Service{Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{
			{Port: 80}, {Port: 80, Protocol: corev1.ProtocolUDP}, {Port: 443, Name: "https"}}}}, true},
		{"an atomic list of integers", &corev1.Pod{Spec: corev1.PodSpec{SecurityContext: &corev1.PodSecurityContext{SupplementalGroups: []int64{1, 1, 0}}}}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := managers[reflect.TypeOf(tc.obj)]
			if got := checkDirect(t, m, tc.obj); got != tc.direct {
				t.Errorf("took the direct road: %v, want %v", got, tc.direct)
			}
		})
	}
}

// The keys structured-merge-diff reads from a list element, on a schema
// of our own: keys that are omitted (omitempty) and have no default, so an
// element can have part of its key or none of it; a default standing in
// for a missing key; integer and string keys, and a boolean one.
func TestDirectFieldsListKeys(t *testing.T) {
	type elem struct {
		Name  string `json:"name,omitempty"`
		Port  int32  `json:"port,omitempty"`
		On    *bool  `json:"on,omitempty"`
		Value string `json:"value,omitempty"`
	}
	type root struct {
		Items     []elem   `json:"items,omitempty"`
		Defaulted []elem   `json:"defaulted,omitempty"`
		Set       []int32  `json:"set"`
		Atomic    []elem   `json:"atomic,omitempty"`
		Strings   []string `json:"strings,omitempty"`
	}
	parser, err := typed.NewParser(`types:
- name: root
  map:
    fields:
    - name: items
      type:
        list:
          elementType: {namedType: elem}
          elementRelationship: associative
          keys: [port, name, "on"]
    - name: defaulted
      type:
        list:
          elementType: {namedType: defaultedElem}
          elementRelationship: associative
          keys: [name, port]
    - name: set
      type:
        list:
          elementType: {scalar: numeric}
          elementRelationship: associative
    - name: atomic
      type:
        list:
          elementType: {namedType: elem}
          elementRelationship: atomic
    - name: strings
      type:
        list:
          elementType: {scalar: string}
          elementRelationship: associative
- name: elem
  map:
    fields:
    - {name: name, type: {scalar: string}}
    - {name: port, type: {scalar: numeric}}
    - {name: "on", type: {scalar: boolean}}
    - {name: value, type: {scalar: string}}
- name: defaultedElem
  map:
    fields:
    - {name: name, type: {scalar: string}, default: "x"}
    - {name: port, type: {scalar: numeric}, default: 80}
    - {name: "on", type: {scalar: boolean}}
    - {name: value, type: {scalar: string}}
`)
	if err != nil {
		t.Fatal(err)
	}
	rootName := "root"
	d := newDirectFields(&parser.Schema, smdschema.TypeRef{NamedType: &rootName}, reflect.TypeOf(&root{}))
	if d == nil {
		t.Fatal("no direct road")
	}
	pt := parser.Type(rootName)
	empty, err := pt.FromStructured(&root{})
	if err != nil {
		t.Fatal(err)
	}
	yes := true
	for _, tc := range []struct {
		name   string
		obj    root
		direct bool
	}{
		{"all keys", root{Items: []elem{{Name: "a", Port: 1, On: &yes, Value: "v"}}}, true},
		{"part of the key", root{Items: []elem{{Name: "a"}, {Port: 1}, {Name: "a", Port: 1}, {On: &yes}}}, true},
		{"no key", root{Items: []elem{{Value: "v"}}}, false},
		{"no key among keyed", root{Items: []elem{{Name: "a"}, {}}}, false},
		{"same partial key twice", root{Items: []elem{{Port: 1, Value: "a"}, {Port: 1, Value: "b"}}}, false},
		{"defaults stand in", root{Defaulted: []elem{{}, {Name: "y"}, {Port: 81, Value: "v"}}}, true},
		{"a default equal to a key", root{Defaulted: []elem{{}, {Name: "x", Port: 80}}}, false},
		{"a set of numbers", root{Set: []int32{3, 1, 2}}, true},
		{"an empty set against null", root{Set: []int32{}}, true},
		{"a set with a duplicate", root{Set: []int32{1, 1}}, false},
		{"an atomic list of structs", root{Atomic: []elem{{}, {}, {Name: "a"}}}, true},
		{"a set of strings", root{Strings: []string{"", "a"}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := tc.obj
			tv, err := pt.FromStructured(&obj, typed.AllowDuplicates)
			if err != nil {
				// A validation error: the caller takes structured-merge-
				// diff's road, which reports it.
				if _, ok := d.fields(reflect.ValueOf(&obj)); ok || tc.direct {
					t.Fatalf("took the direct road: %v, want %v; structured-merge-diff: %v", ok, tc.direct, err)
				}
				return
			}
			cmp, err := empty.Compare(tv)
			if err != nil {
				t.Fatal(err)
			}
			want := cmp.Added.Union(cmp.Modified)
			got, ok := d.fields(reflect.ValueOf(&obj))
			if ok != tc.direct {
				t.Fatalf("took the direct road: %v, want %v (structured-merge-diff: %v)", ok, tc.direct, want)
			}
			if ok && !got.Equals(want) {
				t.Fatalf("got %v\nwant %v", got, want)
			}
			shape, sok := d.shape(reflect.ValueOf(&obj), nil)
			if sok != ok || (ok && len(shape) == 0) {
				t.Fatalf("shape %q, %v; fields %v", shape, sok, ok)
			}
		})
	}
}

// checkDirect compares both roads on obj and reports whether the direct
// one answered.
func checkDirect(t *testing.T, m *Manager, obj runtime.Object) bool {
	t.Helper()
	acc, err := meta.Accessor(obj)
	if err != nil {
		t.Fatal(err)
	}
	acc.SetManagedFields(nil)
	before := obj.DeepCopyObject()
	want, wantOK := m.create.compared(obj.DeepCopyObject(), m.tc)
	got, gotOK := m.create.direct.fields(reflect.ValueOf(obj))
	if !reflect.DeepEqual(before, obj) {
		t.Fatalf("the direct road changed the object")
	}
	if !gotOK {
		return false
	}
	if !wantOK {
		t.Fatalf("direct road answered for an object structured-merge-diff rejects: %#v", obj)
	}
	if !got.Equals(want) {
		gj, _ := got.ToJSON()
		wj, _ := want.ToJSON()
		t.Fatalf("sets differ for %#v\n got: %s\nwant: %s", obj, gj, wj)
	}
	// The FieldsV1 form, computed and then kept for the object's shape,
	// is structured-merge-diff's, byte for byte.
	wantJSON, _ := m.create.toJSON(m.create.owned(want), true)
	for range 2 {
		gotJSON, ok := m.create.fieldsJSON(obj, m.tc)
		if !ok || !bytes.Equal(gotJSON, wantJSON) {
			t.Fatalf("FieldsV1 %s (%v), want %s", gotJSON, ok, wantJSON)
		}
	}
	return true
}

// A shape does not depend on the order of map entries, and differs
// when the keys differ.
func TestDirectShape(t *testing.T) {
	m := managerFor(t, corev1.SchemeGroupVersion.WithKind("ConfigMap"), "")
	data := map[string]string{}
	for i := range 20 {
		data[string(rune('a'+i))] = "v"
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Labels: map[string]string{"x": "1", "y": "2"}}, Data: data}
	first, ok := m.create.direct.shape(reflect.ValueOf(cm), nil)
	if !ok {
		t.Fatal("no shape")
	}
	for range 10 {
		again, _ := m.create.direct.shape(reflect.ValueOf(cm.DeepCopy()), nil)
		if !bytes.Equal(first, again) {
			t.Fatalf("shape changed: %q, then %q", first, again)
		}
	}
	other := cm.DeepCopy()
	other.Data["ab"] = "v"
	delete(other.Data, "a")
	if s, _ := m.create.direct.shape(reflect.ValueOf(other), nil); bytes.Equal(first, s) {
		t.Fatal("different keys, same shape")
	}
}

// hasList reports whether v holds a non-empty list (a slice not of bytes).
func hasList(v reflect.Value, depth int) bool {
	if depth > 64 {
		return false
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		return !v.IsNil() && hasList(v.Elem(), depth+1)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if hasList(v.Field(i), depth+1) {
				return true
			}
		}
	case reflect.Slice:
		return v.Len() > 0 && v.Type().Elem().Kind() != reflect.Uint8
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			if hasList(it.Value(), depth+1) {
				return true
			}
		}
	}
	return false
}

// thin puts most fields of v back to their zero values and empties or
// drops most slices, maps and pointers, so random objects reach the
// direct road and the zero and empty values it treats specially.
func thin(r *rand.Rand, v reflect.Value, depth int) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return
		}
		if depth > 0 && r.Intn(3) == 0 && v.CanSet() {
			v.Set(reflect.Zero(v.Type()))
			return
		}
		thin(r, v.Elem(), depth+1)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			f := v.Field(i)
			if !f.CanSet() {
				continue
			}
			if depth > 0 && r.Intn(3) == 0 {
				f.Set(reflect.Zero(f.Type()))
				continue
			}
			thin(r, f, depth+1)
		}
	case reflect.Slice:
		if !v.CanSet() || v.Type().Elem().Kind() == reflect.Uint8 {
			return
		}
		switch r.Intn(4) {
		case 0:
			v.Set(reflect.Zero(v.Type()))
		case 1:
			v.Set(reflect.MakeSlice(v.Type(), 0, 0))
		case 2:
			for i := 0; i < v.Len(); i++ {
				thin(r, v.Index(i), depth+1)
			}
		}
	case reflect.Map:
		if !v.CanSet() {
			return
		}
		switch r.Intn(4) {
		case 0:
			v.Set(reflect.Zero(v.Type()))
		case 1:
			v.Set(reflect.MakeMap(v.Type()))
		}
	case reflect.String:
		if v.CanSet() && r.Intn(4) == 0 {
			v.SetString("")
		}
	}
}

// Concurrent creates of a few shapes share the kept forms safely and each
// gets its own copy.
func TestDirectShapesConcurrently(t *testing.T) {
	m := managerFor(t, corev1.SchemeGroupVersion.WithKind("ConfigMap"), "")
	objs := []*corev1.ConfigMap{
		{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Data: map[string]string{"k": "v"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "b", Labels: map[string]string{"l": "1"}}, Data: map[string]string{"k": "v", "j": "w"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "c"}},
	}
	want := make([][]byte, len(objs))
	for i, o := range objs {
		set, ok := m.create.compared(o.DeepCopy(), m.tc)
		if !ok {
			t.Fatal("structured-merge-diff rejects", o)
		}
		want[i], _ = m.create.toJSON(m.create.owned(set), true)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := range 8 {
		wg.Go(func() {
			for n := range 200 {
				i := (g + n) % len(objs)
				got, ok := m.create.fieldsJSON(objs[i].DeepCopy(), m.tc)
				if !ok || !bytes.Equal(got, want[i]) {
					errs <- fmt.Sprintf("object %d: %s, want %s", i, got, want[i])
					return
				}
				if len(got) > 0 {
					got[0] = 'x' // a copy: the kept form must not change
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// Pods, whose shapes all differ (each has its own kube-api-access volume
// name), stop looking shapes up after one window and drop the forms kept
// in it; after the rest they look again. ConfigMaps of a few shapes keep
// looking them up. The forms are structured-merge-diff's either way.
func TestShapesSetAsideWhenTheyDoNotPay(t *testing.T) {
	m := managerFor(t, corev1.SchemeGroupVersion.WithKind("Pod"), "", "status")
	base := &corev1.Pod{}
	readJSON(t, "pod-running.json", base)
	base.ManagedFields, base.Status = nil, corev1.PodStatus{}
	create := func(i int) {
		t.Helper()
		p := base.DeepCopy()
		vol := fmt.Sprintf("kube-api-access-%05d", i)
		p.Spec.Volumes[0].Name = vol
		p.Spec.Containers[0].VolumeMounts[0].Name = vol
		set, ok := m.create.compared(p.DeepCopy(), m.tc)
		if !ok {
			t.Fatal("structured-merge-diff rejects the pod")
		}
		want, _ := m.create.toJSON(m.create.owned(set), true)
		got, ok := m.create.fieldsJSON(p, m.tc)
		if !ok || !bytes.Equal(got, want) {
			t.Fatalf("pod %d: %s, want %s", i, got, want)
		}
	}
	for i := range shapeWindow - 1 {
		create(i)
	}
	if n := m.create.nshapes.Load(); n != shapeWindow-1 || m.create.shapeUse.resting.Load() != 0 {
		t.Fatalf("within the first window: %d forms kept, resting %d", n, m.create.shapeUse.resting.Load())
	}
	create(shapeWindow)
	if n := m.create.nshapes.Load(); n != 0 || m.create.shapeUse.resting.Load() != shapeRest {
		t.Fatalf("after a window without hits: %d forms kept, resting %d", n, m.create.shapeUse.resting.Load())
	}
	m.create.shapesMu.RLock()
	kept := len(m.create.shapes)
	m.create.shapesMu.RUnlock()
	if kept != 0 {
		t.Fatalf("%d forms still kept", kept)
	}
	create(shapeWindow + 1)
	if n := m.create.nshapes.Load(); n != 0 || m.create.shapeUse.resting.Load() != shapeRest-1 {
		t.Fatalf("resting: %d forms kept, resting %d", n, m.create.shapeUse.resting.Load())
	}
	m.create.shapeUse.resting.Store(1)
	create(shapeWindow + 2)
	create(shapeWindow + 3)
	if n := m.create.nshapes.Load(); n != 1 || m.create.shapeUse.lookups.Load() != 1 {
		t.Fatalf("after the rest: %d forms kept, %d lookups", n, m.create.shapeUse.lookups.Load())
	}

	cms := managerFor(t, corev1.SchemeGroupVersion.WithKind("ConfigMap"), "")
	for i := range 3 * shapeWindow {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint(i)}, Data: map[string]string{fmt.Sprint(i % 3): "v"}}
		if _, ok := cms.create.fieldsJSON(cm, cms.tc); !ok {
			t.Fatal("no fields")
		}
	}
	if n := cms.create.nshapes.Load(); n != 3 || cms.create.shapeUse.resting.Load() != 0 {
		t.Fatalf("ConfigMaps of three shapes: %d forms kept, resting %d", n, cms.create.shapeUse.resting.Load())
	}
}

// toUnstructured gives a metav1.MicroTime the JSON form structured-merge-
// diff's own conversion gives it (MarshalJSON and back), for zero, nanosecond
// and non-UTC times and years outside 1-9999.
func TestToUnstructuredMicroTime(t *testing.T) {
	entry := value.TypeReflectEntryOf(microTimeType)
	east := time.FixedZone("east", 5*3600+30*60)
	for _, mt := range []metav1.MicroTime{
		{},
		metav1.NewMicroTime(time.Date(2026, 11, 23, 5, 30, 0, 0, time.UTC)),
		metav1.NewMicroTime(time.Date(2026, 11, 23, 5, 30, 1, 123456789, time.UTC)),
		metav1.NewMicroTime(time.Date(2026, 11, 23, 23, 59, 59, 999999999, east)),
		metav1.NewMicroTime(time.Date(0, 1, 1, 0, 0, 0, 1000, time.UTC)),
		metav1.NewMicroTime(time.Date(-12, 6, 1, 0, 0, 0, 0, time.UTC)),
		metav1.NewMicroTime(time.Date(12345, 6, 1, 0, 0, 0, 0, east)),
		metav1.NewMicroTime(time.Unix(0, 0)),
	} {
		for _, v := range []reflect.Value{reflect.ValueOf(mt), reflect.ValueOf(&mt).Elem()} {
			want, werr := entry.ToUnstructured(v)
			got, gerr := toUnstructured(entry, v)
			if got != want || (gerr == nil) != (werr == nil) {
				t.Errorf("%v: got %#v, %v; structured-merge-diff %#v, %v", mt, got, gerr, want, werr)
			}
		}
	}
}
