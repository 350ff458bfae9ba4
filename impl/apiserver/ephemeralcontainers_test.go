package apiserver_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/randfill"
)

// TestEphemeralContainersSubresource drives pods/ephemeralcontainers as
// `kubectl debug` does (a strategic merge patch adding one ephemeral
// container) and checks what it may not do.
func TestEphemeralContainersSubresource(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	pods := e.cs.CoreV1().Pods("default")
	created, err := pods.Create(c, pod("web"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// Discovery lists the subresource (kubectl debug looks for it).
	res, err := e.cs.Discovery().ServerResourcesForGroupVersion("v1")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range res.APIResources {
		if r.Name == "pods/ephemeralcontainers" {
			found = r.Kind == "Pod" && strings.Join(r.Verbs, ",") == "get,patch,update"
		}
	}
	if !found {
		t.Fatalf("discovery: no pods/ephemeralcontainers (kind Pod, verbs get,patch,update): %+v", res.APIResources)
	}

	// kubectl debug web --image=busybox: a strategic merge patch of the
	// pod, sent to the subresource; anything but ephemeralContainers in it
	// is ignored.
	patch := `{"metadata":{"labels":{"app":"changed"}},"spec":{"activeDeadlineSeconds":5,"ephemeralContainers":[{"name":"debugger-abcde","image":"busybox","resources":{},"terminationMessagePolicy":"File","imagePullPolicy":"Always","stdin":true,"tty":true}]}}`
	got, err := pods.Patch(c, "web", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "ephemeralcontainers")
	if err != nil {
		t.Fatalf("kubectl debug's patch: %v", err)
	}
	if len(got.Spec.EphemeralContainers) != 1 || got.Spec.EphemeralContainers[0].Name != "debugger-abcde" {
		t.Fatalf("ephemeral containers %+v", got.Spec.EphemeralContainers)
	}
	if ec := got.Spec.EphemeralContainers[0]; ec.TerminationMessagePath != corev1.TerminationMessagePathDefault {
		t.Errorf("not defaulted: %+v", ec)
	}
	if got.Labels["app"] != "web" || got.Spec.ActiveDeadlineSeconds != nil {
		t.Errorf("the subresource took more than ephemeral containers: labels %v activeDeadlineSeconds %v", got.Labels, got.Spec.ActiveDeadlineSeconds)
	}
	if got.Generation != created.Generation+1 || got.ResourceVersion == created.ResourceVersion {
		t.Errorf("generation %d (was %d), resourceVersion %s (was %s)", got.Generation, created.Generation, got.ResourceVersion, created.ResourceVersion)
	}

	// GET of the subresource is the pod.
	r := e.do("GET", "/api/v1/namespaces/default/pods/web/ephemeralcontainers", nil)
	if r.code != http.StatusOK || !strings.Contains(string(r.body), `"kind":"Pod"`) || !strings.Contains(string(r.body), "debugger-abcde") {
		t.Fatalf("GET: %d %s", r.code, r.body)
	}

	// The typed client's update (PUT) appends a second one.
	cur := got.DeepCopy()
	cur.Spec.EphemeralContainers = append(cur.Spec.EphemeralContainers, corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "second", Image: "busybox", Command: []string{"true"},
	}, TargetContainerName: "c"})
	got, err = pods.UpdateEphemeralContainers(c, "web", cur, metav1.UpdateOptions{})
	if err != nil || len(got.Spec.EphemeralContainers) != 2 {
		t.Fatalf("PUT: %v %+v", err, got)
	}

	path := "/api/v1/namespaces/default/pods/web/ephemeralcontainers"
	smp := "application/strategic-merge-patch+json"
	// (A strategic merge patch puts new list entries first: index 0.)
	for _, tc := range []struct {
		name, body, contentType, msg string
		code                         int
		reason                       metav1.StatusReason
	}{
		{"remove one", `{"spec":{"ephemeralContainers":[{"name":"second","$patch":"delete"}]}}`, smp,
			`spec.ephemeralContainers: Forbidden: existing ephemeral containers "second" may not be removed`, 422, metav1.StatusReasonInvalid},
		{"change one", `{"spec":{"ephemeralContainers":[{"name":"second","image":"alpine"}]}}`, smp,
			`spec.ephemeralContainers: Forbidden: existing ephemeral containers "second" may not be changed`, 422, metav1.StatusReasonInvalid},
		{"ports", `{"spec":{"ephemeralContainers":[{"name":"third","image":"busybox","ports":[{"containerPort":80}]}]}}`, smp,
			`spec.ephemeralContainers[0].ports: Forbidden: cannot be set for an Ephemeral Container`, 422, metav1.StatusReasonInvalid},
		{"no image", `{"spec":{"ephemeralContainers":[{"name":"third"}]}}`, smp,
			`spec.ephemeralContainers[0].image: Required value`, 422, metav1.StatusReasonInvalid},
		{"name of a container", `{"spec":{"ephemeralContainers":[{"name":"c","image":"busybox"}]}}`, smp,
			`spec.ephemeralContainers[0].name: Duplicate value: "c"`, 422, metav1.StatusReasonInvalid},
		{"unknown target", `{"spec":{"ephemeralContainers":[{"name":"third","image":"busybox","targetContainerName":"nope"}]}}`, smp,
			`spec.ephemeralContainers[0].targetContainerName: Not found: "nope"`, 422, metav1.StatusReasonInvalid},
		{"not JSON", `{"spec":`, smp, "", 400, metav1.StatusReasonBadRequest},
		{"wrong type", `{"spec":{"ephemeralContainers":"x"}}`, "application/merge-patch+json", "patch: Invalid value", 422, metav1.StatusReasonInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do("PATCH", path, []byte(tc.body), "Content-Type", tc.contentType)
			expectStatus(t, r, tc.code, tc.reason, tc.msg)
		})
	}
	after, err := pods.Get(c, "web", metav1.GetOptions{})
	if err != nil || after.ResourceVersion != got.ResourceVersion {
		t.Fatalf("a rejected write changed the pod: %v", err)
	}

	// The main endpoint may not change them, nor may a create set them.
	r = e.do("PATCH", "/api/v1/namespaces/default/pods/web", []byte(`{"spec":{"ephemeralContainers":[{"name":"x","image":"busybox"}]}}`), "Content-Type", smp)
	expectStatus(t, r, 422, metav1.StatusReasonInvalid, "pod updates may not change fields other than")
	withEC := pod("created-with-one")
	withEC.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "d", Image: "busybox"}}}
	if _, err := pods.Create(c, withEC, metav1.CreateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.ephemeralContainers: Forbidden: cannot be set on create") {
		t.Fatalf("create with ephemeral containers: %v", err)
	}

	// JSON merge patch and server-side apply reach it too.
	if _, err := pods.Patch(c, "web", types.MergePatchType, []byte(`{"spec":{"ephemeralContainers":[`+
		`{"name":"debugger-abcde","image":"busybox","resources":{},"terminationMessagePolicy":"File","imagePullPolicy":"Always","stdin":true,"tty":true},`+
		`{"name":"second","image":"busybox","command":["true"],"targetContainerName":"c"},{"name":"third","image":"busybox"}]}}`), metav1.PatchOptions{}, "ephemeralcontainers"); err != nil {
		t.Fatalf("merge patch: %v", err)
	}
	applied, err := pods.Patch(c, "web", types.ApplyPatchType, []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web"},"spec":{"ephemeralContainers":[{"name":"fourth","image":"busybox"}]}}`),
		metav1.PatchOptions{FieldManager: "debugger"}, "ephemeralcontainers")
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	if n := len(applied.Spec.EphemeralContainers); n != 4 {
		t.Errorf("after apply: %d ephemeral containers, want 4", n)
	}
	sub := ""
	for _, m := range applied.ManagedFields {
		if m.Manager == "debugger" {
			sub = m.Subresource
		}
	}
	if sub != "ephemeralcontainers" {
		t.Errorf("managed fields of the apply: subresource %q, want ephemeralcontainers (%+v)", sub, applied.ManagedFields)
	}

	// A missing pod is a 404.
	r = e.do("GET", "/api/v1/namespaces/default/pods/nope/ephemeralcontainers", nil)
	expectStatus(t, r, http.StatusNotFound, metav1.StatusReasonNotFound, `pods "nope" not found`)
}

// TestEphemeralContainersRandomInput: ephemeral containers filled at random
// (randfill: every field, nested pointers, odd strings and quantities) sent
// through the subresource get a 200 or a 4xx Status, never a 5xx or a
// dropped connection; a rejected write changes nothing.
func TestEphemeralContainersRandomInput(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	pods := e.cs.CoreV1().Pods("default")
	if _, err := pods.Create(c, pod("fuzzed"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	path := "/api/v1/namespaces/default/pods/fuzzed/ephemeralcontainers"
	f := randfill.NewWithSeed(25).NilChance(0.5).NumElements(0, 2).MaxDepth(6)
	accepted := 0
	for i := 0; i < 200; i++ {
		var ec corev1.EphemeralContainer
		f.Fill(&ec)
		if i%2 == 0 {
			// Half keep a plausible name and image, so that more requests
			// get past the first checks; of those, half set only name,
			// image, command, args, stdin and tty (mostly accepted).
			ec.Name, ec.Image = fmt.Sprintf("d%d", i), "busybox"
			if i%4 == 0 {
				ec.EphemeralContainerCommon = corev1.EphemeralContainerCommon{Name: ec.Name, Image: ec.Image,
					Command: ec.Command, Args: ec.Args, Stdin: ec.Stdin, TTY: ec.TTY}
				ec.TargetContainerName = ""
			}
		}
		body, err := json.Marshal(map[string]any{"spec": map[string]any{"ephemeralContainers": []corev1.EphemeralContainer{ec}}})
		if err != nil {
			t.Fatal(err)
		}
		before, err := pods.Get(c, "fuzzed", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		r := e.do("PATCH", path, body, "Content-Type", "application/strategic-merge-patch+json")
		switch {
		case r.code == http.StatusOK:
			accepted++
		case r.code >= 400 && r.code < 500:
			r.status(t)
			after, err := pods.Get(c, "fuzzed", metav1.GetOptions{})
			if err != nil || after.ResourceVersion != before.ResourceVersion {
				t.Fatalf("a rejected write (%d) changed the pod: %v", r.code, err)
			}
		default:
			t.Fatalf("request %d: code %d: %s\nbody %s", i, r.code, r.body, body)
		}
	}
	t.Logf("%d of 200 random ephemeral containers accepted", accepted)

	// The subresource exists for pods only.
	r := e.do("GET", "/api/v1/namespaces/default/configmaps/x/ephemeralcontainers", nil)
	expectStatus(t, r, http.StatusNotFound, metav1.StatusReasonNotFound, "")
}

// TestPatchWrongTypes: a JSON, merge or strategic merge patch whose
// result does not decode as a Pod (a string or an object where the schema
// has a list, a number for a name, an unknown field under
// fieldValidation=Strict) is kube-apiserver's 422 Invalid with no kind or
// name and one cause on the field "patch" — its value the patched object
// for JSON and merge patches, the patch for strategic merge patches, whose
// result is decoded from the merged map as kube-apiserver does — through
// pods/ephemeralcontainers and the main endpoint alike. A rejected patch
// changes nothing.
func TestPatchWrongTypes(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	pods := e.cs.CoreV1().Pods("default")
	if _, err := pods.Create(c, pod("web"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// One ephemeral container, so that strategic merge patches merge lists.
	if _, err := pods.Patch(c, "web", types.StrategicMergePatchType,
		[]byte(`{"spec":{"ephemeralContainers":[{"name":"d","image":"busybox"}]}}`), metav1.PatchOptions{}, "ephemeralcontainers"); err != nil {
		t.Fatal(err)
	}
	before, err := pods.Get(c, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const (
		sub    = "/api/v1/namespaces/default/pods/web/ephemeralcontainers"
		main   = "/api/v1/namespaces/default/pods/web"
		merge  = "application/merge-patch+json"
		smp    = "application/strategic-merge-patch+json"
		jsonPT = "application/json-patch+json"
	)
	for _, tc := range []struct {
		name, path, contentType, body string
		// detail is the cause's message after the value; value is in the
		// value ("" for a 400).
		detail, value string
		code          int
	}{
		{"merge: string for the list", sub, merge, `{"spec":{"ephemeralContainers":"x"}}`,
			`json: cannot unmarshal string into Go struct field PodSpec.spec.ephemeralContainers of type []v1.EphemeralContainer`, `\"ephemeralContainers\":\"x\"`, 422},
		{"merge: object for the list", sub, merge, `{"spec":{"ephemeralContainers":{"a":1}}}`,
			`json: cannot unmarshal object into Go struct field PodSpec.spec.ephemeralContainers of type []v1.EphemeralContainer`, `\"ephemeralContainers\":{\"a\":1}`, 422},
		{"merge: number for a name", sub, merge, `{"spec":{"ephemeralContainers":[{"name":5,"image":"busybox"}]}}`,
			`json: cannot unmarshal number into Go struct field EphemeralContainer.spec.ephemeralContainers.EphemeralContainerCommon.name of type string`, `\"name\":5`, 422},
		{"smp: string for the list", sub, smp, `{"spec":{"ephemeralContainers":"x"}}`,
			`cannot restore slice from string`, `map[spec:map[ephemeralContainers:x]]`, 422},
		{"smp: object for the list", sub, smp, `{"spec":{"ephemeralContainers":{"a":1}}}`,
			`cannot restore slice from map`, `map[spec:map[ephemeralContainers:map[a:1]]]`, 422},
		{"smp: number for a name", sub, smp, `{"spec":{"ephemeralContainers":[{"name":5,"image":"busybox"}]}}`,
			`cannot convert int64 to string`, `map[spec:map[ephemeralContainers:[map[image:busybox name:5]]]]`, 422},
		{"json patch: string for the list", sub, jsonPT, `[{"op":"replace","path":"/spec/ephemeralContainers","value":"x"}]`,
			`json: cannot unmarshal string into Go struct field PodSpec.spec.ephemeralContainers of type []v1.EphemeralContainer`, `\"ephemeralContainers\":\"x\"`, 422},
		{"json patch: number for a name", sub, jsonPT, `[{"op":"add","path":"/spec/ephemeralContainers/-","value":{"name":5,"image":"busybox"}}]`,
			`json: cannot unmarshal number into Go struct field EphemeralContainer.spec.ephemeralContainers.EphemeralContainerCommon.name of type string`, `\"name\":5`, 422},
		{"merge: string for a number", main, merge, `{"spec":{"activeDeadlineSeconds":"5"}}`,
			`json: cannot unmarshal string into Go struct field PodSpec.spec.activeDeadlineSeconds of type int64`, `\"activeDeadlineSeconds\":\"5\"`, 422},
		{"merge: fraction for an integer", main, merge, `{"spec":{"activeDeadlineSeconds":5.5}}`,
			`json: cannot unmarshal number 5.5 into Go struct field PodSpec.spec.activeDeadlineSeconds of type int64`, `\"activeDeadlineSeconds\":5.5`, 422},
		{"smp: string for a number", main, smp, `{"spec":{"activeDeadlineSeconds":"5"}}`,
			`unrecognized type: int64`, `map[spec:map[activeDeadlineSeconds:5]]`, 422},
		{"smp: fraction for an integer", main, smp, `{"spec":{"activeDeadlineSeconds":5.5}}`,
			`cannot convert float64 to int64`, `map[spec:map[activeDeadlineSeconds:5.5]]`, 422},
		{"json patch: string for a number", main, jsonPT, `[{"op":"add","path":"/spec/activeDeadlineSeconds","value":"5"}]`,
			`json: cannot unmarshal string into Go struct field PodSpec.spec.activeDeadlineSeconds of type int64`, `\"activeDeadlineSeconds\":\"5\"`, 422},
		{"merge: unknown field, Strict", main + "?fieldValidation=Strict", merge, `{"spec":{"bogus":1}}`,
			`strict decoding error: unknown field "spec.bogus"`, `\"bogus\":1`, 422},
		{"smp: unknown field, Strict", sub + "?fieldValidation=Strict", smp, `{"spec":{"bogus":1}}`,
			`strict decoding error: unknown field "spec.bogus"`, `map[spec:map[bogus:1]]`, 422},
		{"json patch: unknown field, Strict", sub + "?fieldValidation=Strict", jsonPT, `[{"op":"add","path":"/spec/bogus","value":1}]`,
			`strict decoding error: unknown field "spec.bogus"`, `\"bogus\":1`, 422},
		// Not a patch of the wrong type but a malformed one: 400 (once
		// the pod is read: TestMalformedPatchOfMissingObject). (A strategic merge patch mixing element types
		// with a list's existing ones is a 500 in kube-apiserver, which
		// hands the library's error up unclassified; ours is a 400.)
		{"smp: not an object", sub, smp, `["x"]`, `json: cannot unmarshal array into Go value of type map[string]interface {}`, "", 400},
		{"merge: not an object", sub, merge, `["x"]`, `error decoding patch: json: cannot unmarshal array`, "", 400},
		// Under Ignore kube-apiserver does not decode a merge patch
		// before merging it: a list replaces the whole pod, which then
		// does not decode.
		{"merge: not an object, Ignore", sub + "?fieldValidation=Ignore", merge, `["x"]`,
			`couldn't get version/kind; json parse error: json: cannot unmarshal array into Go value of type struct { APIVersion string "json:\"apiVersion,omitempty\""; Kind string "json:\"kind,omitempty\"" }`, `"[\"x\"]"`, 422},
		{"merge: a string, Ignore", sub + "?fieldValidation=Ignore", merge, `"x"`, `Invalid JSON Patch`, "", 400},
		{"smp: number among the list's objects", sub, smp, `{"spec":{"ephemeralContainers":[1]}}`, `list element types are not identical`, "", 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do("PATCH", tc.path, []byte(tc.body), "Content-Type", tc.contentType)
			if tc.code == http.StatusBadRequest {
				if st := expectStatus(t, r, tc.code, metav1.StatusReasonBadRequest, tc.detail); !strings.HasPrefix(st.Message, tc.detail) {
					t.Fatalf("message %q does not start with %q", st.Message, tc.detail)
				}
				return
			}
			st := expectStatus(t, r, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, ` "" is invalid: patch: Invalid value: "`)
			if d := st.Details; d == nil || d.Kind != "" || d.Name != "" || len(d.Causes) != 1 ||
				d.Causes[0].Type != metav1.CauseTypeFieldValueInvalid || d.Causes[0].Field != "patch" {
				t.Fatalf("details %+v, want one FieldValueInvalid cause on \"patch\" and no kind or name", d)
			}
			msg := st.Details.Causes[0].Message
			if !strings.HasPrefix(msg, `Invalid value: "`) || !strings.HasSuffix(msg, `": `+tc.detail) || !strings.Contains(msg, tc.value) {
				t.Fatalf("cause %q\nwant the value to contain %s and the detail %q", msg, tc.value, tc.detail)
			}
			if st.Message != ` "" is invalid: patch: `+msg {
				t.Errorf("message %q is not the cause's %q", st.Message, msg)
			}
		})
	}
	after, err := pods.Get(c, "web", metav1.GetOptions{})
	if err != nil || after.ResourceVersion != before.ResourceVersion {
		t.Fatalf("a rejected patch changed the pod: %v", err)
	}

	// A strategic merge patch takes a whole number written as a fraction
	// for an integer field (a merge patch, whose result is decoded from
	// JSON as written, does not).
	got, err := pods.Patch(c, "web", types.StrategicMergePatchType, []byte(`{"spec":{"activeDeadlineSeconds":30.0}}`), metav1.PatchOptions{})
	if err != nil || got.Spec.ActiveDeadlineSeconds == nil || *got.Spec.ActiveDeadlineSeconds != 30 {
		t.Fatalf("smp of 30.0: %v %+v", err, got)
	}
}

// TestPatchDuplicateFields: as kube-apiserver, a merge or strategic merge
// patch is decoded strictly under fieldValidation=Strict and Warn (the
// default), so a field written twice in the patch itself — which the
// merged object no longer shows — is a strict decoding error: under
// Strict a 422 on "patch" listing it before the merged object's own
// (an unknown field), under Warn a warning, under Ignore nothing.
func TestPatchDuplicateFields(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	if _, err := e.cs.CoreV1().Pods("default").Create(c, pod("web"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const path = "/api/v1/namespaces/default/pods/web"
	dup := `{"metadata":{"labels":{"a":"1"}},"metadata":{"labels":{"b":"2"}}}`
	dupUnknown := `{"metadata":{"labels":{"a":"1"},"labels":{"b":"2"}},"spec":{"bogus":1}}`
	for _, pt := range []string{"application/merge-patch+json", "application/strategic-merge-patch+json"} {
		t.Run(pt, func(t *testing.T) {
			r := e.do("PATCH", path+"?fieldValidation=Strict", []byte(dup), "Content-Type", pt)
			st := expectStatus(t, r, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, ` "" is invalid: patch: Invalid value: "`)
			if !strings.HasSuffix(st.Message, `": strict decoding error: duplicate field "metadata"`) {
				t.Errorf("Strict, duplicate: %q", st.Message)
			}
			r = e.do("PATCH", path+"?fieldValidation=Strict", []byte(dupUnknown), "Content-Type", pt)
			st = expectStatus(t, r, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, ` "" is invalid: patch: Invalid value: "`)
			if !strings.HasSuffix(st.Message, `": strict decoding error: duplicate field "metadata.labels", unknown field "spec.bogus"`) {
				t.Errorf("Strict, duplicate and unknown: %q", st.Message)
			}
			r = e.do("PATCH", path, []byte(dupUnknown), "Content-Type", pt)
			if w := r.header.Values("Warning"); r.code != http.StatusOK || len(w) != 2 ||
				!strings.Contains(w[0], `duplicate field \"metadata.labels\"`) || !strings.Contains(w[1], `unknown field \"spec.bogus\"`) {
				t.Errorf("Warn: %d, warnings %q", r.code, w)
			}
			r = e.do("PATCH", path+"?fieldValidation=Ignore", []byte(dup), "Content-Type", pt)
			if w := r.header.Values("Warning"); r.code != http.StatusOK || len(w) != 0 {
				t.Errorf("Ignore: %d, warnings %q", r.code, w)
			}
		})
	}
}

// TestMalformedPatchOfMissingObject: kube-apiserver decodes a patch only
// once it has read the object it patches, so a malformed JSON, merge or
// strategic merge patch (or one of too many operations) of an object that
// does not exist is a 404, as a well-formed one.
func TestMalformedPatchOfMissingObject(t *testing.T) {
	e := newEnv(t, nil)
	const missing = "/api/v1/namespaces/default/pods/nope"
	for _, tc := range []struct{ contentType, body string }{
		{"application/strategic-merge-patch+json", `{"spec":`},
		{"application/strategic-merge-patch+json", `["x"]`},
		{"application/merge-patch+json", `{"spec":`},
		{"application/json-patch+json", `{"op":"add"}`},
		{"application/json-patch+json", string(manyOps(10001))},
	} {
		r := e.do("PATCH", missing, []byte(tc.body), "Content-Type", tc.contentType)
		if r.code != http.StatusNotFound {
			t.Errorf("%s %.20s: %d %s, want 404", tc.contentType, tc.body, r.code, r.body)
		}
	}
}

// TestJSONPatchStrict: as kube-apiserver, under fieldValidation=Strict and
// Warn (the default) a JSON patch's operations are decoded strictly: a
// field an operation does not have (or has twice) is "json patch unknown
// field ..." — under Strict a 422 on "patch", under Warn a warning, under
// Ignore nothing — and operations that are not objects of strings are a
// 400 "error decoding patch: ..." naming upstream's operation type.
func TestJSONPatchStrict(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	if _, err := e.cs.CoreV1().Pods("default").Create(c, pod("web"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const (
		path  = "/api/v1/namespaces/default/pods/web"
		ct    = "application/json-patch+json"
		extra = `[{"op":"add","path":"/metadata/labels/x","value":"y","extra":1}]`
	)
	r := e.do("PATCH", path+"?fieldValidation=Strict", []byte(extra), "Content-Type", ct)
	st := expectStatus(t, r, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, ` "" is invalid: patch: Invalid value: "`)
	if !strings.HasSuffix(st.Message, `": strict decoding error: json patch unknown field "[0].extra"`) {
		t.Errorf("Strict: %q", st.Message)
	}
	r = e.do("PATCH", path, []byte(extra), "Content-Type", ct)
	if w := r.header.Values("Warning"); r.code != http.StatusOK || len(w) != 1 || !strings.Contains(w[0], `json patch unknown field \"[0].extra\"`) {
		t.Errorf("Warn: %d, warnings %q", r.code, w)
	}
	r = e.do("PATCH", path+"?fieldValidation=Ignore", []byte(extra), "Content-Type", ct)
	if w := r.header.Values("Warning"); r.code != http.StatusOK || len(w) != 0 {
		t.Errorf("Ignore: %d, warnings %q", r.code, w)
	}
	for body, msg := range map[string]string{
		`{"op":"add"}`:           `error decoding patch: json: cannot unmarshal object into Go value of type []handlers.jsonPatchOp`,
		`[{"op":1,"path":"/x"}]`: `error decoding patch: json: cannot unmarshal number into Go struct field jsonPatchOp.op of type string`,
	} {
		r = e.do("PATCH", path, []byte(body), "Content-Type", ct)
		if st := expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest, ""); st.Message != msg {
			t.Errorf("%s: %q, want %q", body, st.Message, msg)
		}
	}
}
