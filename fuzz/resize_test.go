package fuzz

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	kubectlqos "k8s.io/kubectl/pkg/util/qos"
)

// pods/resize (in-place resize) takes the containers' cpu and memory
// requests and limits and their resizePolicy, nothing else. The generators
// below edit what a resize reads: a container's (app, sidecar or plain
// init) requests and limits set, changed, removed or given other resources,
// limits made equal to the requests or dropped (QoS changes), resizePolicy
// set or removed, and now and then a field a resize must not take (image,
// name, nodeName, labels).

// resizeQuantities are values a resize may set: valid cpu and memory
// amounts, zero, negative and malformed ones.
var resizeQuantities = []string{"50m", "100m", "200m", "1", "2", "64Mi", "128Mi", "256Mi", "1Gi", "0", "-1", "1.5", "1e3", "x"}

// resizeResources are resource names a resize may name; only the first
// two are resizable.
var resizeResources = []string{"cpu", "memory", "ephemeral-storage", "example.com/gpu", "hugepages-2Mi"}

// resizeChange is one edit of a pod document: path set to value, or
// removed.
type resizeChange struct {
	path   jsonPath
	value  any
	remove bool
}

// resizeChanges decides 1–3 edits of pod (a decoded pod document) and
// applies them to it, returning them in order.
func resizeChanges(in *input, pod map[string]any) []resizeChange {
	spec, _ := pod["spec"].(map[string]any)
	lists := []string{"containers"}
	if ics, _ := spec["initContainers"].([]any); len(ics) > 0 {
		lists = append(lists, "initContainers")
	}
	var out []resizeChange
	for range 1 + in.intn(3) {
		list := "containers"
		if in.intn(4) == 0 {
			list = pick(in, lists)
		}
		cs, _ := spec[list].([]any)
		if len(cs) == 0 {
			continue
		}
		i := in.intn(len(cs))
		c, _ := cs[i].(map[string]any)
		at := func(p ...any) jsonPath { return append(jsonPath{"spec", list, i}, p...) }
		kind := pick(in, []string{"requests", "limits"})
		res := pick(in, resizeResources[:2])
		var ch resizeChange
		switch in.intn(10) {
		case 0, 1, 2: // a cpu or memory request or limit changed or added
			ch = resizeChange{path: at("resources", kind, res), value: pick(in, resizeQuantities)}
		case 3: // removed
			ch = resizeChange{path: at("resources", kind, res), remove: true}
		case 4: // all limits, or all resources, removed
			if in.bool() {
				ch = resizeChange{path: at("resources", "limits"), remove: true}
			} else {
				ch = resizeChange{path: at("resources"), remove: true}
			}
		case 5: // limits made the requests (towards Guaranteed)
			var reqs any = map[string]any{}
			if r, ok := c["resources"].(map[string]any); ok && r["requests"] != nil {
				reqs = clone(r["requests"])
			}
			ch = resizeChange{path: at("resources", "limits"), value: reqs}
		case 6: // a resource a resize may not change
			ch = resizeChange{path: at("resources", kind, pick(in, resizeResources[2:])), value: pick(in, resizeQuantities)}
		case 7: // resizePolicy
			if in.intn(4) == 0 {
				ch = resizeChange{path: at("resizePolicy"), remove: true}
				break
			}
			var ps []any
			for range 1 + in.intn(2) {
				ps = append(ps, map[string]any{
					"resourceName":  pick(in, []string{"cpu", "memory", "ephemeral-storage", ""}),
					"restartPolicy": pick(in, []string{"NotRequired", "RestartContainer", "Never"}),
				})
			}
			ch = resizeChange{path: at("resizePolicy"), value: ps}
		case 8: // a field a resize must not take
			switch in.intn(4) {
			case 0:
				ch = resizeChange{path: at("image"), value: "busybox"}
			case 1:
				ch = resizeChange{path: at("name"), value: "renamed"}
			case 2:
				ch = resizeChange{path: jsonPath{"spec", "nodeName"}, value: "n1"}
			default:
				ch = resizeChange{path: jsonPath{"metadata", "labels", "resized"}, value: "yes"}
			}
		default: // a fuzzed value somewhere in the container's resources
			ch = resizeChange{path: at("resources", pick(in, []string{"requests", "limits", "claims", in.string(6)})), value: fuzzValue(in)}
		}
		if ch.remove {
			removePath(pod, ch.path)
		} else {
			setPath(pod, ch.path, clone(ch.value))
		}
		out = append(out, ch)
	}
	return out
}

// clone deep-copies a decoded JSON value.
func clone(v any) any {
	switch v := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			m[k] = clone(e)
		}
		return m
	case []any:
		a := make([]any, len(v))
		for i, e := range v {
			a[i] = clone(e)
		}
		return a
	}
	return v
}

// resizedDoc is the pod document doc with resize edits applied (a PUT
// body for pods/resize); doc unchanged when it is not a JSON object.
func resizedDoc(in *input, doc []byte) []byte {
	var pod map[string]any
	if json.Unmarshal(doc, &pod) != nil || pod == nil {
		return doc
	}
	resizeChanges(in, pod)
	out, err := json.Marshal(pod)
	if err != nil {
		return doc
	}
	return out
}

// resizePatchBody is a patch of the pod document doc, in the patch type
// contentType names, making resize edits: JSON patch operations on their
// paths (an add of the first missing ancestor, a remove), a merge patch
// replacing the edited container lists whole, or a strategic merge patch
// of the edited containers by name. One in five is a generic patchBody.
func resizePatchBody(in *input, contentType string, doc []byte) []byte {
	var pod map[string]any
	if in.intn(5) == 0 || json.Unmarshal(doc, &pod) != nil || pod == nil {
		return patchBody(in, contentType, doc)
	}
	orig := clone(pod)
	changes := resizeChanges(in, pod)
	var patch any
	switch {
	case strings.HasPrefix(contentType, "application/json-patch+json"):
		ops := []any{}
		work := orig
		for _, ch := range changes {
			if ch.remove {
				ops = append(ops, map[string]any{"op": "remove", "path": ch.path.pointer()})
				work = removePath(work, ch.path)
				continue
			}
			// add needs the parent: add the first missing ancestor whole.
			p, v := ch.path, clone(ch.value)
			for n := 1; n < len(ch.path); n++ {
				if !hasPath(work, ch.path[:n]) {
					p = ch.path[:n]
					v = setPath(map[string]any{}, ch.path[n:], v)
					if _, ok := ch.path[n].(int); ok {
						v = []any{} // an index under a missing list cannot be added
					}
					break
				}
			}
			ops = append(ops, map[string]any{"op": pick(in, []string{"add", "add", "replace"}), "path": p.pointer(), "value": v})
			work = setPath(work, p, clone(v))
		}
		patch = ops
	case strings.HasPrefix(contentType, "application/strategic-merge-patch+json"):
		m := map[string]any{}
		entries := map[string]map[string]any{}
		spec, _ := orig.(map[string]any)["spec"].(map[string]any)
		for _, ch := range changes {
			var v any
			if !ch.remove {
				v = clone(ch.value)
			}
			if len(ch.path) < 4 || (ch.path[1] != "containers" && ch.path[1] != "initContainers") {
				setPath(m, ch.path, v)
				continue
			}
			list := ch.path[1].(string)
			cs, _ := spec[list].([]any)
			c, _ := cs[ch.path[2].(int)].(map[string]any)
			name, _ := c["name"].(string)
			key := list + "/" + name
			e := entries[key]
			if e == nil {
				e = map[string]any{"name": name}
				entries[key] = e
				setPath(m, jsonPath{"spec", list}, append(listAt(m, list), e))
			}
			setPath(e, ch.path[3:], v)
		}
		patch = m
	default: // merge patch: the edited lists whole, other paths set
		m := map[string]any{}
		spec, _ := pod["spec"].(map[string]any)
		for _, ch := range changes {
			if len(ch.path) >= 3 && (ch.path[1] == "containers" || ch.path[1] == "initContainers") {
				setPath(m, jsonPath{"spec", ch.path[1]}, spec[ch.path[1].(string)])
				continue
			}
			var v any
			if !ch.remove {
				v = clone(ch.value)
			}
			setPath(m, ch.path, v)
		}
		patch = m
	}
	out, err := json.Marshal(patch)
	if err != nil {
		return doc
	}
	return out
}

// listAt is m's spec.<list>, a strategic merge patch's list being built.
func listAt(m map[string]any, list string) []any {
	spec, _ := m["spec"].(map[string]any)
	l, _ := spec[list].([]any)
	return l
}

// hasPath: p exists in v.
func hasPath(v any, p jsonPath) bool {
	for _, e := range p {
		switch e := e.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return false
			}
			if v, ok = m[e]; !ok {
				return false
			}
		case int:
			a, ok := v.([]any)
			if !ok || e >= len(a) {
				return false
			}
			v = a[e]
		}
	}
	return true
}

// runningStatus is a merge patch of a pod's status making its containers
// (named in the pod document doc) running: with their resources reported
// (a node that supports resize) or without (one that does not, upstream's
// version-skew refusal). nil when doc is not a pod.
func runningStatus(doc []byte, withResources bool) []byte {
	var pod corev1.Pod
	if json.Unmarshal(doc, &pod) != nil || len(pod.Spec.Containers) == 0 {
		return nil
	}
	var statuses []any
	for _, c := range pod.Spec.Containers {
		s := map[string]any{"name": c.Name, "ready": true, "restartCount": 0, "image": c.Image, "imageID": "", "containerID": "containerd://" + c.Name,
			"started": true, "state": map[string]any{"running": map[string]any{"startedAt": "2026-01-01T00:00:00Z"}}}
		if withResources {
			s["resources"] = c.Resources
			s["allocatedResources"] = c.Resources.Requests
		}
		statuses = append(statuses, s)
	}
	b, _ := json.Marshal(map[string]any{"status": map[string]any{"phase": "Running", "containerStatuses": statuses}})
	return b
}

// checkResized is the property of a 2xx pods/resize answer: after (the
// pod answered) is before (the pod as stored before the write) but for
// its containers' resources and resizePolicy and the pod-level resources;
// labels, annotations and status are kept; the generation moved by one
// exactly when the spec changed; and the QoS class is the one before.
// It returns what is wrong, or "".
func checkResized(before, after *corev1.Pod) string {
	a, b := after.DeepCopy(), before.DeepCopy()
	for _, p := range []*corev1.Pod{a, b} {
		for i := range p.Spec.Containers {
			p.Spec.Containers[i].Resources = corev1.ResourceRequirements{}
			p.Spec.Containers[i].ResizePolicy = nil
		}
		for i := range p.Spec.InitContainers {
			p.Spec.InitContainers[i].Resources = corev1.ResourceRequirements{}
			p.Spec.InitContainers[i].ResizePolicy = nil
		}
		p.Spec.Resources = nil
	}
	switch {
	case !apiequality.Semantic.DeepEqual(a.Spec, b.Spec):
		return "the resize changed more of the spec than resources and resizePolicy"
	case !apiequality.Semantic.DeepEqual(after.Labels, before.Labels), !apiequality.Semantic.DeepEqual(after.Annotations, before.Annotations):
		return "the resize changed labels or annotations"
	case !apiequality.Semantic.DeepEqual(after.Status, before.Status):
		return "the resize changed the status"
	}
	changed := !apiequality.Semantic.DeepEqual(after.Spec, before.Spec)
	if want := before.Generation + map[bool]int64{true: 1}[changed]; after.Generation != want {
		return fmt.Sprintf("generation %d after a resize from %d (spec changed: %t)", after.Generation, before.Generation, changed)
	}
	if q0, q1 := kubectlqos.ComputePodQOS(before), kubectlqos.ComputePodQOS(after); q0 != q1 {
		return fmt.Sprintf("the resize changed the QoS class from %s to %s", q0, q1)
	}
	return ""
}

// TestCheckResized: checkResized accepts a resize of resources and
// refuses each other change it looks for.
func TestCheckResized(t *testing.T) {
	before := &corev1.Pod{}
	before.Generation = 1
	before.Spec.Containers = []corev1.Container{{Name: "c", Image: "nginx", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}
	resized := before.DeepCopy()
	resized.Generation = 2
	resized.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("200m")
	if msg := checkResized(before, resized); msg != "" {
		t.Errorf("a cpu resize refused: %s", msg)
	}
	for name, edit := range map[string]func(p *corev1.Pod){
		"image":         func(p *corev1.Pod) { p.Spec.Containers[0].Image = "busybox" },
		"label":         func(p *corev1.Pod) { p.Labels = map[string]string{"a": "b"} },
		"status":        func(p *corev1.Pod) { p.Status.Phase = corev1.PodRunning },
		"generation":    func(p *corev1.Pod) { p.Generation = 1 },
		"QoS class":     func(p *corev1.Pod) { p.Spec.Containers[0].Resources = corev1.ResourceRequirements{} },
		"no-op bumping": func(p *corev1.Pod) { p.Spec.Containers[0].Resources = before.Spec.Containers[0].Resources },
	} {
		p := resized.DeepCopy()
		edit(p)
		if msg := checkResized(before, p); msg == "" {
			t.Errorf("%s: a resize that changed it accepted", name)
		}
	}
}
