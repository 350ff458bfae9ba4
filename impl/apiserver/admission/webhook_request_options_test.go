package admission_test

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// optionsHook is a webhook server that allows everything and keeps, per
// path, what each review it is sent says about the request's options.
type optionsHook struct {
	*httptest.Server
	mu   sync.Mutex
	seen map[string][]sentOptions
}

// sentOptions is what a review says about one call: its operation,
// subresource and namespace, its top-level dryRun and request.options as
// sent (bytes unchanged).
type sentOptions struct {
	op, sub, ns string
	dryRun      string
	options     string
}

func (s sentOptions) String() string {
	return fmt.Sprintf("%s %q dryRun=%s options=%s", s.op, s.sub, s.dryRun, s.options)
}

func newOptionsHook(t *testing.T) *optionsHook {
	h := &optionsHook{seen: map[string][]sentOptions{}}
	h.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var rev struct {
			APIVersion string `json:"apiVersion"`
			Request    struct {
				UID         string          `json:"uid"`
				Operation   string          `json:"operation"`
				SubResource string          `json:"subResource"`
				Namespace   string          `json:"namespace"`
				DryRun      json.RawMessage `json:"dryRun"`
				Options     json.RawMessage `json:"options"`
			} `json:"request"`
		}
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &rev); err != nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		q := rev.Request
		h.mu.Lock()
		h.seen[r.URL.Path] = append(h.seen[r.URL.Path], sentOptions{q.Operation, q.SubResource, q.Namespace, string(q.DryRun), string(q.Options)})
		h.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"apiVersion":%q,"kind":"AdmissionReview","response":{"uid":%q,"allowed":true}}`, rev.APIVersion, q.UID)
	}))
	h.Config.ErrorLog = log.New(io.Discard, "", 0)
	h.StartTLS()
	t.Cleanup(h.Close)
	return h
}

// take returns and forgets the calls path was sent in namespace ns.
func (h *optionsHook) take(path, ns string) []sentOptions {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out, rest []sentOptions
	for _, s := range h.seen[path] {
		if s.ns == ns {
			out = append(out, s)
		} else {
			rest = append(rest, s)
		}
	}
	h.seen[path] = rest
	return out
}

// validating is a configuration of one validating webhook per review
// version, at path /<version>, for every operation on configmaps,
// limitranges, namespaces, pods and the pod subresources.
func (h *optionsHook) validating() *admissionregistrationv1.ValidatingWebhookConfiguration {
	fail := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNone
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "options"}}
	for _, v := range []string{"v1", "v1beta1"} {
		url := h.URL + "/" + v
		cfg.Webhooks = append(cfg.Webhooks, admissionregistrationv1.ValidatingWebhook{
			Name: v + ".options.example.com", FailurePolicy: &fail, SideEffects: &none, AdmissionReviewVersions: []string{v},
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url,
				CABundle: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: h.Certificate().Raw})},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.OperationAll},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"},
					Resources: []string{"configmaps", "pods", "pods/status", "pods/binding", "pods/eviction", "namespaces", "limitranges"}},
			}},
		})
	}
	return cfg
}

// TestWebhookRequestOptions: a webhook's request.options are the options
// of the request as kube-apiserver hands them to admission, byte for byte
// in v1 and v1beta1 reviews alike: kind and apiVersion meta.k8s.io/v1
// first, then the options type's fields in its order. A create (binding
// and eviction too) has the query's CreateOptions, an update (status
// too) its UpdateOptions; a patch's options become UpdateOptions, or
// CreateOptions when an apply creates the object (force dropped), as an
// update's do when it creates the object. A delete has its DeleteOptions,
// from the body or else the query (none: empty options), after the
// store's changes (a negative grace period is 1; a pod's grace period its
// own); a deletecollection's items the options as decoded; a namespace's
// delete has the namespace's uid as precondition. A delete the store
// answers without admitting it (a pod's pending graceful deletion not
// shortened, a terminating namespace with spec.finalizers) calls no
// webhook. ignoreStoreReadErrorWithClusterBreakingPotential is dropped
// (and not validated), as kube-apiserver drops it while its alpha
// AllowUnsafeMalformedObjectDeletion gate is off. The top-level dryRun is
// the options'.
func TestWebhookRequestOptions(t *testing.T) {
	cs, _ := startServer(t)
	ctx := context.Background()
	const ns = "whopts"
	created(cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})).must(t, "namespace")
	created(cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})).must(t, "service account")
	hook := newOptionsHook(t)
	created(cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, hook.validating(), metav1.CreateOptions{})).must(t, "webhook configuration")
	cms := cs.CoreV1().ConfigMaps(ns)
	pods := cs.CoreV1().Pods(ns)
	n := 0
	eventually(t, "both webhooks called", func() error {
		n++
		created(cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("probe%d", n)}}, metav1.CreateOptions{})).must(t, "probe")
		if len(hook.take("/v1", ns)) == 0 || len(hook.take("/v1beta1", ns)) == 0 {
			return fmt.Errorf("webhooks not called yet")
		}
		return nil
	})
	pod := func(name, node string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	}
	rest := cs.CoreV1().RESTClient()
	force := true
	minus3 := int64(-3)
	background := metav1.DeletePropagationBackground
	var uid types.UID

	const create, update, del = "CREATE", "UPDATE", "DELETE"
	const meta = `"apiVersion":"meta.k8s.io/v1"`
	steps := []struct {
		id    string
		ns    string       // the calls' namespace, when not ns
		setup func() error // its calls are not checked
		do    func() error
		// want: operation, subresource, top-level dryRun, options.
		want [][4]string
	}{
		{id: "create", do: func() error {
			_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, metav1.CreateOptions{FieldManager: "maker", FieldValidation: "Strict"})
			return err
		}, want: [][4]string{{create, "", "false", `{"kind":"CreateOptions",` + meta + `,"fieldManager":"maker","fieldValidation":"Strict"}`}}},
		{id: "create dry run", do: func() error {
			_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "b"}}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		}, want: [][4]string{{create, "", "true", `{"kind":"CreateOptions",` + meta + `,"dryRun":["All"]}`}}},
		{id: "create, no parameters", do: func() error {
			_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "e"}}, metav1.CreateOptions{})
			return err
		}, want: [][4]string{{create, "", "false", `{"kind":"CreateOptions",` + meta + `}`}}},
		{id: "update", do: func() error {
			cm, err := cms.Get(ctx, "a", metav1.GetOptions{})
			if err != nil {
				return err
			}
			cm.Data = map[string]string{"k": "v"}
			_, err = cms.Update(ctx, cm, metav1.UpdateOptions{FieldManager: "upd"})
			return err
		}, want: [][4]string{{update, "", "false", `{"kind":"UpdateOptions",` + meta + `,"fieldManager":"upd"}`}}},
		{id: "merge patch", do: func() error {
			_, err := cms.Patch(ctx, "a", types.MergePatchType, []byte(`{"data":{"k":"w"}}`), metav1.PatchOptions{
				DryRun: []string{metav1.DryRunAll}, FieldManager: "pat", FieldValidation: "Ignore"})
			return err
		}, want: [][4]string{{update, "", "true", `{"kind":"UpdateOptions",` + meta + `,"dryRun":["All"],"fieldManager":"pat","fieldValidation":"Ignore"}`}}},
		{id: "apply creating", do: func() error {
			_, err := cms.Patch(ctx, "c", types.ApplyPatchType, []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}`),
				metav1.PatchOptions{FieldManager: "app", Force: &force})
			return err
		}, want: [][4]string{{create, "", "false", `{"kind":"CreateOptions",` + meta + `,"fieldManager":"app"}`}}},
		{id: "apply updating", do: func() error {
			_, err := cms.Patch(ctx, "c", types.ApplyPatchType, []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"x":"y"}}`),
				metav1.PatchOptions{FieldManager: "app", Force: &force, FieldValidation: "Warn"})
			return err
		}, want: [][4]string{{update, "", "false", `{"kind":"UpdateOptions",` + meta + `,"fieldManager":"app","fieldValidation":"Warn"}`}}},
		{id: "update creating", do: func() error {
			_, err := cs.CoreV1().LimitRanges(ns).Update(ctx, &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "lr"}},
				metav1.UpdateOptions{FieldManager: "putter", FieldValidation: "Ignore"})
			return err
		}, want: [][4]string{{create, "", "false", `{"kind":"CreateOptions",` + meta + `,"fieldManager":"putter","fieldValidation":"Ignore"}`}}},
		{id: "delete with a body", setup: func() error {
			cm, err := cms.Get(ctx, "a", metav1.GetOptions{})
			uid = cm.UID
			return err
		}, do: func() error {
			return cms.Delete(ctx, "a", metav1.DeleteOptions{GracePeriodSeconds: &minus3,
				Preconditions: &metav1.Preconditions{UID: &uid}, PropagationPolicy: &background})
		}, want: [][4]string{{del, "", "false", ""}}},
		{id: "delete, options in the query", do: func() error {
			return rest.Delete().Namespace(ns).Resource("configmaps").Name("c").
				Param("gracePeriodSeconds", "7").Param("dryRun", "All").Param("propagationPolicy", "Orphan").Do(ctx).Error()
		}, want: [][4]string{{del, "", "true", `{"kind":"DeleteOptions",` + meta + `,"gracePeriodSeconds":7,"propagationPolicy":"Orphan","dryRun":["All"]}`}}},
		{id: "delete, unsafe option dropped", do: func() error {
			return rest.Delete().Namespace(ns).Resource("configmaps").Name("e").SetHeader("Content-Type", "application/json").
				Body([]byte(`{"ignoreStoreReadErrorWithClusterBreakingPotential":true,"gracePeriodSeconds":0,"dryRun":["All"]}`)).Do(ctx).Error()
		}, want: [][4]string{{del, "", "true", `{"kind":"DeleteOptions",` + meta + `,"gracePeriodSeconds":0,"dryRun":["All"]}`}}},
		{id: "delete, no body, no query", do: func() error {
			return rest.Delete().Namespace(ns).Resource("configmaps").Name("c").Do(ctx).Error()
		}, want: [][4]string{{del, "", "false", `{"kind":"DeleteOptions",` + meta + `}`}}},
		{id: "deletecollection", setup: func() error {
			for _, name := range []string{"d1", "d2"} {
				if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"set": "coll"}}}, metav1.CreateOptions{}); err != nil {
					return err
				}
			}
			return nil
		}, do: func() error {
			return cms.DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &minus3}, metav1.ListOptions{LabelSelector: "set=coll"})
		}, want: [][4]string{
			{del, "", "false", `{"kind":"DeleteOptions",` + meta + `,"gracePeriodSeconds":-3}`},
			{del, "", "false", `{"kind":"DeleteOptions",` + meta + `,"gracePeriodSeconds":-3}`},
		}},
		{id: "status update", setup: func() error {
			if _, err := pods.Create(ctx, pod("run", "n1"), metav1.CreateOptions{}); err != nil {
				return err
			}
			_, err := pods.Create(ctx, pod("unbound", ""), metav1.CreateOptions{})
			return err
		}, do: func() error {
			p, err := pods.Get(ctx, "run", metav1.GetOptions{})
			if err != nil {
				return err
			}
			p.Status.Phase = corev1.PodRunning
			_, err = pods.UpdateStatus(ctx, p, metav1.UpdateOptions{FieldValidation: "Warn"})
			return err
		}, want: [][4]string{{update, "status", "false", `{"kind":"UpdateOptions",` + meta + `,"fieldValidation":"Warn"}`}}},
		{id: "binding", do: func() error {
			return pods.Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "unbound"}, Target: corev1.ObjectReference{Kind: "Node", Name: "n1"}},
				metav1.CreateOptions{FieldManager: "sched"})
		}, want: [][4]string{{create, "binding", "false", `{"kind":"CreateOptions",` + meta + `,"fieldManager":"sched"}`}}},
		{id: "eviction", do: func() error {
			return rest.Post().Namespace(ns).Resource("pods").Name("run").SubResource("eviction").Param("dryRun", "All").
				SetHeader("Content-Type", "application/json").
				Body([]byte(`{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"run"},"deleteOptions":{"gracePeriodSeconds":5}}`)).Do(ctx).Error()
		}, want: [][4]string{{create, "eviction", "true", `{"kind":"CreateOptions",` + meta + `,"dryRun":["All"]}`}}},
		{id: "pod delete, no options", do: func() error {
			return rest.Delete().Namespace(ns).Resource("pods").Name("run").Do(ctx).Error()
		}, want: [][4]string{{del, "", "false", `{"kind":"DeleteOptions",` + meta + `,"gracePeriodSeconds":30}`}}},
		{id: "pod delete, pending", do: func() error {
			return rest.Delete().Namespace(ns).Resource("pods").Name("run").Param("gracePeriodSeconds", "30").Do(ctx).Error()
		}},
		{id: "pod delete, shorter grace", do: func() error {
			return rest.Delete().Namespace(ns).Resource("pods").Name("run").Param("gracePeriodSeconds", "10").Do(ctx).Error()
		}, want: [][4]string{{del, "", "false", `{"kind":"DeleteOptions",` + meta + `,"gracePeriodSeconds":10}`}}},
		{id: "namespace delete", ns: "whopts-gone", setup: func() error {
			n, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "whopts-gone"}}, metav1.CreateOptions{})
			if err == nil {
				uid = n.UID
			}
			return err
		}, do: func() error {
			return cs.CoreV1().Namespaces().Delete(ctx, "whopts-gone", metav1.DeleteOptions{PropagationPolicy: &background})
		}, want: [][4]string{{del, "", "false", ""}}},
		{id: "namespace delete, terminating", ns: "whopts-gone", do: func() error {
			return cs.CoreV1().Namespaces().Delete(ctx, "whopts-gone", metav1.DeleteOptions{})
		}},
	}
	for _, s := range steps {
		if s.setup != nil {
			if err := s.setup(); err != nil {
				t.Fatalf("%s: setup: %v", s.id, err)
			}
		}
		callNS := ns
		if s.ns != "" {
			callNS = s.ns
		}
		hook.take("/v1", callNS)
		hook.take("/v1beta1", callNS)
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.id, err)
		}
		switch s.id {
		case "delete with a body":
			s.want[0][3] = `{"kind":"DeleteOptions",` + meta + `,"gracePeriodSeconds":1,"preconditions":{"uid":"` + string(uid) + `"},"propagationPolicy":"Background"}`
		case "namespace delete":
			s.want[0][3] = `{"kind":"DeleteOptions",` + meta + `,"preconditions":{"uid":"` + string(uid) + `"},"propagationPolicy":"Background"}`
		}
		var want []string
		for _, w := range s.want {
			want = append(want, sentOptions{op: w[0], sub: w[1], dryRun: w[2], options: w[3]}.String())
		}
		for _, path := range []string{"/v1", "/v1beta1"} {
			var got []string
			for _, g := range hook.take(path, callNS) {
				got = append(got, g.String())
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("%s: %s webhook sent\n%s\nwant\n%s", s.id, path, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		}
	}
}
