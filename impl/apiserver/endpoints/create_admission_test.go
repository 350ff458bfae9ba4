package endpoints

import (
	"context"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubeproof/kubeproof/impl/apiserver/admission"
	"github.com/kubeproof/kubeproof/impl/apiserver/request"
	"github.com/kubeproof/kubeproof/impl/storage"
)

// recordingPlugin keeps a copy of the attributes each phase saw.
type recordingPlugin struct{ admitted, validated []admission.Attributes }

func (p *recordingPlugin) Admit(_ context.Context, a *admission.Attributes) error {
	p.admitted = append(p.admitted, *a)
	a.Name = "changed-by-a-mutator" // a mutator's change to the attributes does not reach validation
	return nil
}

func (p *recordingPlugin) Validate(_ context.Context, a *admission.Attributes) error {
	p.validated = append(p.validated, *a)
	return nil
}

// acceptingStore answers every create as written.
type acceptingStore struct{ storage.Interface }

func (acceptingStore) Create(_ context.Context, _ string, obj, out runtime.Object) error {
	*out.(*corev1.ConfigMap) = *obj.(*corev1.ConfigMap)
	return nil
}

// Mutating admission sees the create as sent (a generateName create
// without its name), validating admission the object about to be written
// (the generated name), each attributes of their own.
func TestCreateAdmissionAttributes(t *testing.T) {
	p := &recordingPlugin{}
	h := configMapHandler(t, acceptingStore{})
	h.opts.Admission = &admission.Chain{Mutators: []admission.Mutator{p}, Validators: []admission.Validator{p}}
	user := &request.User{Name: "alice"}
	ctx := request.WithUser(context.Background(), user)
	info := &request.Info{Verb: "create", Resource: "configmaps", Namespace: "ns"}
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", GenerateName: "gen-"}}
	if _, err := h.CreateObject(ctx, info, obj, true); err != nil {
		t.Fatal(err)
	}
	want := admission.Attributes{
		Operation: admission.Create, Resource: corev1.SchemeGroupVersion.WithResource("configmaps"),
		Kind: corev1.SchemeGroupVersion.WithKind("ConfigMap"), Namespace: "ns", Object: obj, DryRun: true, User: user,
		Options: admission.RequestOptions{DryRun: []string{metav1.DryRunAll}},
	}
	if len(p.admitted) != 1 || !reflect.DeepEqual(p.admitted[0], want) {
		t.Errorf("admitted %+v, want %+v", p.admitted, want)
	}
	want.Name = obj.Name
	if len(p.validated) != 1 || !reflect.DeepEqual(p.validated[0], want) || len(obj.Name) != len("gen-")+5 {
		t.Errorf("validated %+v, want %+v", p.validated, want)
	}
}

var sinkObject runtime.Object

// A create's admission attributes are one allocation for both phases:
// validation's are written over the mutators'.
func TestCreateAdmissionAttributesAllocatedOnce(t *testing.T) {
	p := &recordingPlugin{}
	h := configMapHandler(t, acceptingStore{})
	chain := &admission.Chain{Mutators: []admission.Mutator{p}, Validators: []admission.Validator{p}}
	ctx := context.Background()
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}}
	create := func() {
		o := *obj
		out, err := h.CreateObject(ctx, nil, &o, false)
		if err != nil {
			t.Fatal(err)
		}
		sinkObject = out
		p.admitted, p.validated = p.admitted[:0], p.validated[:0]
	}
	h.opts.Admission = chain
	// The object's copy, the UID (two), the key, the attributes and the
	// answer's object.
	if n := testing.AllocsPerRun(100, create); n > 6 {
		t.Fatalf("a create with admission plugins allocates %v times, want 6 (attributes of its own for validation take one more)", n)
	}
}
