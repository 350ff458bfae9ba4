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
)

// deleteCallHook is a validating webhook server that allows everything and
// keeps, for each DELETE review, what the old object looked like when it
// was admitted: whether it had a deletionTimestamp, its
// deletionGracePeriodSeconds and finalizers, and the grace period the
// review's options carried.
type deleteCallHook struct {
	*httptest.Server
	mu    sync.Mutex
	calls map[string][]string // by object name
}

func newDeleteCallHook(t *testing.T) *deleteCallHook {
	h := &deleteCallHook{calls: map[string][]string{}}
	h.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var rev struct {
			APIVersion string `json:"apiVersion"`
			Request    struct {
				UID       string `json:"uid"`
				Operation string `json:"operation"`
				Name      string `json:"name"`
				DryRun    bool   `json:"dryRun"`
				OldObject struct {
					Metadata metav1.ObjectMeta `json:"metadata"`
				} `json:"oldObject"`
				Options struct {
					GracePeriodSeconds *int64 `json:"gracePeriodSeconds"`
				} `json:"options"`
			} `json:"request"`
		}
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &rev); err != nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		q := rev.Request
		if q.Operation == "DELETE" {
			m := q.OldObject.Metadata
			h.mu.Lock()
			h.calls[q.Name] = append(h.calls[q.Name], fmt.Sprintf("terminating=%t grace=%s finalizers=%v options.grace=%s dryRun=%t",
				m.DeletionTimestamp != nil, seconds(m.DeletionGracePeriodSeconds), m.Finalizers, seconds(q.Options.GracePeriodSeconds), q.DryRun))
			h.mu.Unlock()
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"apiVersion":%q,"kind":"AdmissionReview","response":{"uid":%q,"allowed":true}}`, rev.APIVersion, q.UID)
	}))
	h.Config.ErrorLog = log.New(io.Discard, "", 0)
	h.StartTLS()
	t.Cleanup(h.Close)
	return h
}

func seconds(s *int64) string {
	if s == nil {
		return "nil"
	}
	return fmt.Sprint(*s)
}

// take returns and forgets the DELETE calls for the object name.
func (h *deleteCallHook) take(name string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := h.calls[name]
	delete(h.calls, name)
	return out
}

func (h *deleteCallHook) configuration(ns string) *admissionregistrationv1.ValidatingWebhookConfiguration {
	fail := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNone
	url := h.URL
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "delete-calls"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "delete-calls.example.com", FailurePolicy: &fail, SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url,
				CABundle: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: h.Certificate().Raw})},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Delete},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps", "pods"}},
			}},
		}},
	}
}

// TestWebhookDeleteCallCount: a delete runs the admission chain as many
// times, on the same old objects, as kube-apiserver's generic store runs
// its delete validation (rest.AdmissionToValidateObjectDeleteFunc): once
// in the update that marks the object (graceful deletion, finalizers) on
// the object as it was, and once more in the storage delete that removes
// it, on the object as marked. So a pod deleted with a grace period of 0
// (asked for, or its own: unscheduled) is admitted twice; a pod given a
// grace period once now and twice at its final delete; an object with
// finalizers once (it stays); an object that is neither graceful nor has
// finalizers once (the storage delete); a dry run once; an object whose
// only finalizer, the orphan one, a Background delete drops twice, on the
// object as stored (the update answers errDeleteNow without writing).
func TestWebhookDeleteCallCount(t *testing.T) {
	cs, _ := startServer(t)
	ctx := context.Background()
	const ns = "whdelcalls"
	created(cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})).must(t, "namespace")
	created(cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})).must(t, "service account")
	hook := newDeleteCallHook(t)
	created(cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, hook.configuration(ns), metav1.CreateOptions{})).must(t, "webhook configuration")
	cms := cs.CoreV1().ConfigMaps(ns)
	pods := cs.CoreV1().Pods(ns)
	n := 0
	eventually(t, "webhook called", func() error {
		n++
		name := fmt.Sprintf("probe%d", n)
		created(cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})).must(t, "probe")
		if err := cms.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatalf("deleting probe: %v", err)
		}
		if len(hook.take(name)) == 0 {
			return fmt.Errorf("webhook not called yet")
		}
		return nil
	})
	pod := func(name, node string, finalizers ...string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: finalizers},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	}
	grace := func(s int64) metav1.DeleteOptions { return metav1.DeleteOptions{GracePeriodSeconds: &s} }
	const (
		fresh      = "terminating=false grace=nil finalizers=[]"
		marked0    = "terminating=true grace=0 finalizers=[]"
		marked30   = "terminating=true grace=30 finalizers=[]"
		finalized  = "terminating=false grace=nil finalizers=[example.com/hold]"
		finalized0 = "terminating=true grace=0 finalizers=[example.com/hold]"
		orphaned   = "terminating=false grace=nil finalizers=[orphan] options.grace=nil dryRun=false"
	)
	steps := []struct {
		id     string
		object string
		setup  func() error
		do     func() error
		want   []string
	}{
		{id: "scheduled pod, grace 0", object: "zero",
			setup: func() error { _, err := pods.Create(ctx, pod("zero", "n1"), metav1.CreateOptions{}); return err },
			do:    func() error { return pods.Delete(ctx, "zero", grace(0)) },
			want:  []string{fresh + " options.grace=0 dryRun=false", marked0 + " options.grace=0 dryRun=false"}},
		{id: "unscheduled pod, no options (grace 0)", object: "unbound",
			setup: func() error { _, err := pods.Create(ctx, pod("unbound", ""), metav1.CreateOptions{}); return err },
			do:    func() error { return pods.Delete(ctx, "unbound", metav1.DeleteOptions{}) },
			want:  []string{fresh + " options.grace=0 dryRun=false", marked0 + " options.grace=0 dryRun=false"}},
		{id: "scheduled pod, its own grace period", object: "slow",
			setup: func() error { _, err := pods.Create(ctx, pod("slow", "n1"), metav1.CreateOptions{}); return err },
			do:    func() error { return pods.Delete(ctx, "slow", metav1.DeleteOptions{}) },
			want:  []string{fresh + " options.grace=30 dryRun=false"}},
		{id: "the same pod's final delete, grace 0", object: "slow",
			do:   func() error { return pods.Delete(ctx, "slow", grace(0)) },
			want: []string{marked30 + " options.grace=0 dryRun=false", marked0 + " options.grace=0 dryRun=false"}},
		{id: "pod with a finalizer, grace 0", object: "held",
			setup: func() error {
				_, err := pods.Create(ctx, pod("held", "n1", "example.com/hold"), metav1.CreateOptions{})
				return err
			},
			do:   func() error { return pods.Delete(ctx, "held", grace(0)) },
			want: []string{finalized + " options.grace=0 dryRun=false"}},
		{id: "the same pod deleted again", object: "held",
			do:   func() error { return pods.Delete(ctx, "held", grace(0)) },
			want: []string{finalized0 + " options.grace=0 dryRun=false"}},
		{id: "pod, grace 0, dry run", object: "dry",
			setup: func() error { _, err := pods.Create(ctx, pod("dry", "n1"), metav1.CreateOptions{}); return err },
			do: func() error {
				o := grace(0)
				o.DryRun = []string{metav1.DryRunAll}
				return pods.Delete(ctx, "dry", o)
			},
			want: []string{fresh + " options.grace=0 dryRun=true"}},
		{id: "config map", object: "plain",
			setup: func() error {
				_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "plain"}}, metav1.CreateOptions{})
				return err
			},
			do:   func() error { return cms.Delete(ctx, "plain", metav1.DeleteOptions{}) },
			want: []string{fresh + " options.grace=nil dryRun=false"}},
		{id: "config map with the orphan finalizer, Background", object: "orphaned",
			setup: func() error {
				_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "orphaned", Finalizers: []string{metav1.FinalizerOrphanDependents}}}, metav1.CreateOptions{})
				return err
			},
			do: func() error {
				bg := metav1.DeletePropagationBackground
				return cms.Delete(ctx, "orphaned", metav1.DeleteOptions{PropagationPolicy: &bg})
			},
			// The update that would drop the finalizer writes nothing
			// (errDeleteNow): the storage delete admits the stored object.
			want: []string{orphaned, orphaned}},
	}
	for _, s := range steps {
		if s.setup != nil {
			if err := s.setup(); err != nil {
				t.Fatalf("%s: setup: %v", s.id, err)
			}
		}
		hook.take(s.object)
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.id, err)
		}
		if got := hook.take(s.object); strings.Join(got, "\n") != strings.Join(s.want, "\n") {
			t.Errorf("%s: webhook called %d times:\n%s\nwant %d:\n%s", s.id, len(got), strings.Join(got, "\n"), len(s.want), strings.Join(s.want, "\n"))
		}
	}
}
