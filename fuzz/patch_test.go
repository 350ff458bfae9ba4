package fuzz

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"

	"github.com/kubeproof/kubeproof/impl/apiserver/codec"
	"github.com/kubeproof/kubeproof/impl/apiserver/resource"
)

// patchTypes are the patch media types the server applies.
var patchTypes = []string{"application/json-patch+json", "application/merge-patch+json", "application/strategic-merge-patch+json"}

// patchSeq names each exec's object uniquely within the process.
var patchSeq atomic.Int64

// FuzzPatch creates a valid object of a served kind, sends it a JSON
// patch, merge patch or strategic merge patch (of the object, its status
// or its scale, or a pod's resize) built from the fuzzer's bytes, and
// deletes it again. A resize patch goes to a pod left pending or made
// running (with its containers' resources reported or not) and edits its
// containers' resources and resizePolicy (resizePatchBody).
// Properties (on top of FuzzHTTP's: no 5xx outside allowed5xx, storage
// changes only on 2xx, nothing stored fails validation):
//   - a 2xx answer of the object or its resize is the object as stored:
//     it validates, and reading it back gives the same object (unless
//     dryRun, when storage is untouched);
//   - a 2xx resize changed nothing but the containers' resources and
//     resizePolicy (and the generation, by one when the spec changed),
//     nor the QoS class (checkResized).
func FuzzPatch(f *testing.F) {
	s := server(f)
	rs, _ := served()
	for i := range rs {
		for pt := range patchTypes {
			f.Add(uint8(i), uint8(pt), uint8(0), false, []byte{1, 2, 3, 4, 5, 6, 7, 8})
			f.Add(uint8(i), uint8(pt), uint8(1), false, []byte{9, 0, 1, 2, 3})
			if rs[i].Resize != nil {
				// Resizes of every pod variant, pending or running.
				for v := range len(templateVariants[templateKey(rs[i])]) + 1 {
					f.Add(uint8(i+v*len(rs)), uint8(pt), uint8(6), false, []byte{byte(v % 3), 1, 1, 0, 0, 0, 2, 0, 1})
				}
			}
		}
	}
	f.Add(uint8(0), uint8(1), uint8(0), false, []byte(`{"metadata":{"labels":{"a":null}}}`))
	f.Fuzz(func(t *testing.T, kind, patchType, target uint8, dryRun bool, data []byte) {
		r := rs[int(kind)%len(rs)]
		if r.Name == "namespaces" {
			// A deleted namespace lingers in Terminating without the
			// namespace controller; FuzzHTTP covers namespaces.
			return
		}
		if !slices.Contains(r.Verbs, "create") || !slices.Contains(r.Verbs, "patch") {
			// Nothing to patch: componentstatuses are computed on each
			// read, never written (FuzzHTTP covers their 405s).
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		ns := patchNamespace
		name := fmt.Sprintf("patch-%d", patchSeq.Add(1))
		base := s.collectionPath(r, ns)
		// kind's high values pick a template variant (seeds keep variant 0).
		tmpl := templateVariant(r, ns, name, int(kind)/len(rs))
		if code, body := s.do(ctx, http.MethodPost, base, codec.JSON, tmpl); code != http.StatusCreated {
			t.Fatalf("creating %s/%s: %d %s", r.Name, name, code, body)
		}
		defer s.do(ctx, http.MethodDelete, base+"/"+name+"?gracePeriodSeconds=0", "", nil)

		path := base + "/" + name
		sub := ""
		switch {
		case target%3 == 1 && r.Status != nil:
			sub = "status"
		case target%3 == 2 && r.Scale != nil:
			sub = "scale"
		case target%3 == 0 && target/3%4 >= 2 && r.Resize != nil:
			// pods/resize: a sixth of the pod inputs (the kept seeds'
			// targets, 0 and 99, stay on the main resource).
			sub = "resize"
		}
		in := &input{data: data}
		if sub == "resize" {
			// The containers running, on a node that reports their
			// resources or on one that does not (resize refused).
			if st := in.intn(3); st > 0 {
				if code, body := s.do(ctx, http.MethodPatch, path+"/status", "application/merge-patch+json", runningStatus(tmpl, st == 1)); code != http.StatusOK {
					t.Fatalf("making %s/%s running: %d %s", r.Name, name, code, body)
				}
			}
		}
		doc := tmpl
		if sub != "" {
			path += "/" + sub
			_, cur := s.do(ctx, http.MethodGet, path, "", nil)
			doc = cur
		}
		ct := patchTypes[int(patchType)%len(patchTypes)]
		var body []byte
		switch {
		case in.intn(6) == 0:
			body = in.rest()
		case sub == "resize":
			body = resizePatchBody(in, ct, doc)
		default:
			body = patchBody(in, ct, doc)
		}
		req := fuzzRequest{method: http.MethodPatch, path: path, query: url.Values{}, contentType: ct, body: body}
		if dryRun {
			req.query.Set("dryRun", "All")
		}
		code, answer := s.check(t, req)
		if code < 200 || code > 299 || (sub != "" && sub != "resize") {
			return
		}
		patched, err := decodeBody(mustCodecs(), r, codec.JSON, answer, false)
		if err != nil {
			t.Fatalf("decoding the patch answer: %v: %q\nrequest:\n%s", err, answer, req)
		}
		if errs := r.Strategy.Validate(ctx, patched); len(errs) > 0 {
			t.Fatalf("patched object fails validation: %v\nrequest:\n%s", errs.ToAggregate(), req)
		}
		if sub == "resize" {
			before, err := decodeBody(mustCodecs(), r, codec.JSON, doc, false)
			if err != nil {
				t.Fatalf("decoding the pod before the resize: %v", err)
			}
			if msg := checkResized(before.(*corev1.Pod), patched.(*corev1.Pod)); msg != "" {
				t.Fatalf("%s:\nbefore %s\nafter %s\nrequest:\n%s", msg, doc, answer, req)
			}
		}
		if dryRun {
			return
		}
		code, stored := s.do(ctx, http.MethodGet, base+"/"+name, "", nil)
		if code != http.StatusOK {
			t.Fatalf("reading back the patched object: %d %s\nrequest:\n%s", code, stored, req)
		}
		got, err := decodeBody(mustCodecs(), r, codec.JSON, stored, false)
		if err != nil {
			t.Fatalf("decoding the stored object: %v\nrequest:\n%s", err, req)
		}
		if !apiequality.Semantic.DeepEqual(patched, got) {
			t.Fatalf("the patch answer differs from what is stored:\nanswer %s\nstored %s\nrequest:\n%s", answer, stored, req)
		}
	})
}

// collectionPath is the URL path of r's objects in namespace ns.
func (s *liveServer) collectionPath(r *resource.Resource, ns string) string {
	root := "/apis/" + r.GroupVersion.String()
	if r.GroupVersion.Group == "" {
		root = "/api/" + r.GroupVersion.Version
	}
	if r.Namespaced {
		root += "/namespaces/" + ns
	}
	return root + "/" + r.Name
}

// mustCodecs is the server's codecs.
func mustCodecs() *codec.Codecs {
	_, c := served()
	return c
}
