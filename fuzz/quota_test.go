package fuzz

// FuzzHTTP's ResourceQuota charges: some of its requests go to
// quotaNamespace, where two ResourceQuotas limit object counts and the
// harness writes their status before each request (no quota controller
// runs), with status.used at 0, one below or at status.hard as the input
// decides. The oracle (checkQuotaCharges) is kube-apiserver's quota
// admission (staging/src/k8s.io/apiserver/pkg/admission/plugin/
// resourcequota/controller.go, checkRequest and the pod and object-count
// evaluators in pkg/quota/v1/evaluator/core) as read for it, with the
// upstream behaviour maintainers describe in kubernetes/kubernetes#119593
// and #110080: the charge is written to status.used when the create is
// admitted, before the object is stored, and nothing gives it back when
// the store then refuses (an AlreadyExists 409); the resource quota
// controller recounts later.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// quotaNamespace holds fuzzQuotas; no other target writes there.
const quotaNamespace = "fuzz-quota"

// fuzzQuotas are the quotas of quotaNamespace: each counts objects of the
// kinds FuzzHTTP creates (legacy names and count/ names).
var fuzzQuotas = []struct {
	name string
	hard map[corev1.ResourceName]int64
}{
	{"objects", map[corev1.ResourceName]int64{corev1.ResourceConfigMaps: 3, corev1.ResourcePods: 2}},
	{"counts", map[corev1.ResourceName]int64{"count/configmaps": 4, "count/secrets": 2, "count/pods": 3}},
}

// quotaCharge is what creating one object of a kind adds to status.used:
// one of each count naming the resource (a pod is created Pending, so it
// counts); other kinds add nothing to fuzzQuotas.
func quotaCharge(resource string) map[corev1.ResourceName]int64 {
	switch resource {
	case "configmaps":
		return map[corev1.ResourceName]int64{corev1.ResourceConfigMaps: 1, "count/configmaps": 1}
	case "pods":
		return map[corev1.ResourceName]int64{corev1.ResourcePods: 1, "count/pods": 1}
	case "secrets":
		return map[corev1.ResourceName]int64{"count/secrets": 1}
	}
	return nil
}

// setUpQuotas puts quotaNamespace, its default service account and
// fuzzQuotas back as they should be, with status.used from in. It
// reports false when a quota had to be created (the admission plugin's
// quota cache may not list it yet: the input is not checked).
func (s *liveServer) setUpQuotas(ctx context.Context, in *input) (bool, error) {
	post := func(path, doc string) (int, error) {
		code, body := s.do(ctx, http.MethodPost, path, "application/json", []byte(doc))
		if code != http.StatusCreated && code != http.StatusConflict {
			return code, fmt.Errorf("POST %s: %d %s", path, code, body)
		}
		return code, nil
	}
	if _, err := post("/api/v1/namespaces", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"`+quotaNamespace+`"}}`); err != nil {
		return false, err
	}
	if _, err := post("/api/v1/namespaces/"+quotaNamespace+"/serviceaccounts", `{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"default"}}`); err != nil {
		return false, err
	}
	settled := true
	for _, q := range fuzzQuotas {
		hard, used := corev1.ResourceList{}, corev1.ResourceList{}
		for n, h := range q.hard {
			hard[n] = *resource.NewQuantity(h, resource.DecimalSI)
		}
		// Ranged in name order so that an input decides the same values.
		for _, n := range sortedResourceNames(q.hard) {
			u := []int64{0, q.hard[n] - 1, q.hard[n]}[in.intn(3)]
			used[n] = *resource.NewQuantity(u, resource.DecimalSI)
		}
		obj := corev1.ResourceQuota{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ResourceQuota"},
			ObjectMeta: metav1.ObjectMeta{Name: q.name}, Spec: corev1.ResourceQuotaSpec{Hard: hard}}
		doc, _ := json.Marshal(obj)
		path := "/api/v1/namespaces/" + quotaNamespace + "/resourcequotas"
		code, err := post(path, string(doc))
		if err != nil {
			return false, err
		}
		if code == http.StatusCreated {
			settled = false
		} else if code, body := s.do(ctx, http.MethodPut, path+"/"+q.name, "application/json", doc); code != http.StatusOK {
			return false, fmt.Errorf("PUT quota %s: %d %s", q.name, code, body)
		}
		obj.Status = corev1.ResourceQuotaStatus{Hard: hard, Used: used}
		doc, _ = json.Marshal(obj)
		if code, body := s.do(ctx, http.MethodPut, path+"/"+q.name+"/status", "application/json", doc); code != http.StatusOK {
			return false, fmt.Errorf("PUT quota %s status: %d %s", q.name, code, body)
		}
	}
	return settled, nil
}

func sortedResourceNames(m map[corev1.ResourceName]int64) []corev1.ResourceName {
	var out []corev1.ResourceName
	for n := range m {
		out = append(out, n)
	}
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// quotaUsage reads status.used of fuzzQuotas (nil for a missing one).
func (s *liveServer) quotaUsage(ctx context.Context) (map[string]map[corev1.ResourceName]int64, error) {
	out := map[string]map[corev1.ResourceName]int64{}
	for _, q := range fuzzQuotas {
		code, body := s.do(ctx, http.MethodGet, "/api/v1/namespaces/"+quotaNamespace+"/resourcequotas/"+q.name, "", nil)
		if code == http.StatusNotFound {
			continue
		}
		var rq corev1.ResourceQuota
		if code != http.StatusOK || json.Unmarshal(body, &rq) != nil {
			return nil, fmt.Errorf("GET quota %s: %d %s", q.name, code, body)
		}
		used := map[corev1.ResourceName]int64{}
		for n := range q.hard {
			u := rq.Status.Used[n]
			used[n] = u.Value()
		}
		out[q.name] = used
	}
	return out, nil
}

// quotaRequest runs one FuzzHTTP request in quotaNamespace and checks the
// quotas' charges.
func (s *liveServer) quotaRequest(t *testing.T, req fuzzRequest, in *input) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	settled, err := s.setUpQuotas(ctx, in)
	if err != nil {
		t.Fatalf("setting up the quotas: %v", err)
	}
	before, err := s.quotaUsage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	code, body := s.check(t, req)
	after, err := s.quotaUsage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if settled {
		checkQuotaCharges(t, req, code, body, before, after)
	}
}

// countedCreate is the resource a request creates in quotaNamespace
// through its collection (a POST without name or subresource), "" for
// any other request.
func countedCreate(req fuzzRequest) string {
	prefix := "/api/v1/namespaces/" + quotaNamespace + "/"
	if req.method != http.MethodPost || !strings.HasPrefix(req.path, prefix) {
		return ""
	}
	res := strings.TrimPrefix(req.path, prefix)
	if strings.Contains(res, "/") {
		return ""
	}
	return res
}

// checkQuotaCharges checks status.used after a request (before: as the
// harness wrote it) as kube-apiserver's quota admission leaves it:
//   - a create of a counted kind admitted (2xx) charged every quota
//     naming its counts by exactly quotaCharge, none of them above
//     status.hard before;
//   - refused with 403 "exceeded quota: <name>", some quota naming it
//     would have gone above status.hard, and nothing was charged;
//   - refused by the store after admission (409 AlreadyExists), charged
//     as if admitted, the charge not given back;
//   - a dry run is checked, never charged;
//   - any other request or refusal charges nothing (deletes give nothing
//     back: the controller does that);
//
// requests to the quotas themselves are not checked.
func checkQuotaCharges(t *testing.T, req fuzzRequest, code int, body []byte, before, after map[string]map[corev1.ResourceName]int64) {
	t.Helper()
	if strings.Contains(req.path, "resourcequotas") {
		return
	}
	var st metav1.Status
	if code >= 400 {
		json.Unmarshal(body, &st)
	}
	report := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("%s\nrequest:\n%s\nanswer %d: %.1500s\nquotas' used before %v, after %v", fmt.Sprintf(format, args...), req, code, body, before, after)
	}
	res := countedCreate(req)
	charge := quotaCharge(res)
	dryRun := req.query.Get("dryRun") == "All"
	// What a charge would make of each quota, and which would exceed.
	exceeded := map[string]bool{}
	for _, q := range fuzzQuotas {
		for n, d := range charge {
			if h, ok := q.hard[n]; ok && before[q.name][n]+d > h {
				exceeded[q.name] = true
			}
		}
	}
	charged := func() bool {
		for _, q := range fuzzQuotas {
			for n := range q.hard {
				if after[q.name][n] != before[q.name][n]+charge[n] {
					return false
				}
			}
		}
		return true
	}
	unchanged := func() bool {
		for _, q := range fuzzQuotas {
			for n := range q.hard {
				if after[q.name][n] != before[q.name][n] {
					return false
				}
			}
		}
		return true
	}
	success := code >= 200 && code < 300
	quotaRefusal := code == http.StatusForbidden && strings.Contains(st.Message, "exceeded quota: ")
	switch {
	case charge == nil || dryRun:
		if !unchanged() {
			report("status.used changed, but the request creates nothing counted (or is a dry run)")
		}
		if charge != nil && success && len(exceeded) > 0 {
			report("dry-run create admitted, but it would take quota %v over status.hard", exceeded)
		}
	case success:
		if len(exceeded) > 0 {
			report("create admitted, but it takes quota %v over status.hard: kube-apiserver refuses it (403 exceeded quota)", exceeded)
		}
		if !charged() {
			report("create admitted, but status.used is not charged exactly %v", charge)
		}
	case quotaRefusal:
		named := false
		for q := range exceeded {
			named = named || strings.Contains(st.Message, "exceeded quota: "+q+",")
		}
		if !named {
			report("refused as exceeding a quota, but no quota it names would be exceeded (%v)", exceeded)
		}
		if !unchanged() {
			report("refused for exceeding a quota, but status.used changed")
		}
	case code == http.StatusConflict && st.Reason == metav1.StatusReasonAlreadyExists:
		// Admitted, then refused by the store: kube-apiserver's quota
		// admission has charged, and nothing gives it back.
		if len(exceeded) > 0 {
			report("an AlreadyExists refusal, but quota admission (before the store) would have refused the create as exceeding %v", exceeded)
		}
		if !charged() {
			report("AlreadyExists after admission: status.used is not charged %v (kube-apiserver charges before the store refuses)", charge)
		}
	case code >= 500:
		// A server error may come before or after the charge.
		if !unchanged() && !charged() {
			report("status.used changed by something other than the create's charge %v", charge)
		}
	default:
		if !unchanged() {
			report("refused before admission, but status.used changed")
		}
	}
}

// quotaChargedOnly reports whether everything written since rev is
// ResourceQuotas of namespace ns whose status.used alone changed: a
// create or update admitted by quota admission and then refused (by the
// store, or a precondition) has charged them, which kube-apiserver does
// not undo (checkQuotaCharges checks the amount in quotaNamespace).
func (s *liveServer) quotaChargedOnly(ctx context.Context, rev int64, ns string) (bool, error) {
	if ns == "" {
		return false, nil
	}
	resp, err := s.etcd.Client().Get(ctx, keyPrefix+"/", clientv3.WithPrefix(), clientv3.WithMinModRev(rev+1))
	if err != nil {
		return false, err
	}
	_, c := served()
	for _, kv := range resp.Kvs {
		if isAllocatorKey(string(kv.Key)) {
			continue
		}
		obj, _, err := c.Factory.UniversalDeserializer().Decode(kv.Value, nil, nil)
		if q, ok := obj.(*corev1.ResourceQuota); err != nil || !ok || q.Namespace != ns {
			return false, nil
		}
		then, err := s.etcd.Client().Get(ctx, string(kv.Key), clientv3.WithRev(rev))
		if err != nil || len(then.Kvs) != 1 {
			return false, err
		}
		var objs [2]*corev1.ResourceQuota
		for i, raw := range [][]byte{then.Kvs[0].Value, kv.Value} {
			obj, _, err := c.Factory.UniversalDeserializer().Decode(raw, nil, nil)
			q, ok := obj.(*corev1.ResourceQuota)
			if err != nil || !ok {
				return false, nil
			}
			objs[i] = q.DeepCopy()
			objs[i].ResourceVersion, objs[i].ManagedFields, objs[i].Status.Used = "", nil, nil
		}
		if b0, _ := json.Marshal(objs[0]); string(b0) != string(mustJSON(objs[1])) {
			return false, nil
		}
	}
	return true, nil
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// requestNamespace is the namespace a request path names for a
// namespaced object ("/…/namespaces/<ns>/<resource>…"), "" for others.
func requestNamespace(path string) string {
	parts := strings.Split(path, "/")
	for i := 0; i+2 < len(parts); i++ {
		if parts[i] == "namespaces" && parts[i+2] != "status" && parts[i+2] != "finalize" {
			return parts[i+1]
		}
	}
	return ""
}

// The quota oracle on requests chosen to reach each of its cases:
// creates admitted and charged, refused for exceeding a quota, refused by
// the store after the charge (AlreadyExists), dry runs, and deletes and
// updates that charge nothing.
func TestQuotaChargesAsKubeApiserver(t *testing.T) {
	s := server(t)
	name := fmt.Sprintf("q%d", time.Now().UnixNano()%1e9)
	cm := func(n string) []byte {
		return fmt.Appendf(nil, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q},"data":{"a":"1"}}`, n)
	}
	coll := "/api/v1/namespaces/" + quotaNamespace + "/"
	pod := fmt.Appendf(nil, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q},"spec":{"containers":[{"name":"c","image":"busybox"}]}}`, name)
	secret := fmt.Appendf(nil, `{"apiVersion":"v1","kind":"Secret","metadata":{"name":%q}}`, name)
	for _, c := range []struct {
		what       string
		method     string
		path       string
		query      string
		body       []byte
		used       []byte // objects: configmaps, pods; counts: count/configmaps, count/pods, count/secrets (0: 0, 1: hard-1, 2: hard)
		wantCode   int
		wantInBody string
	}{
		{"configmap created and charged", "POST", coll + "configmaps", "", cm(name), []byte{0, 0, 0, 0, 0}, 201, ""},
		{"configmap at one below hard", "POST", coll + "configmaps", "", cm(name + "b"), []byte{1, 0, 1, 0, 0}, 201, ""},
		{"configmap over objects' hard", "POST", coll + "configmaps", "", cm(name + "c"), []byte{2, 0, 0, 0, 0}, 403, "exceeded quota: objects,"},
		{"configmap over counts' hard", "POST", coll + "configmaps", "", cm(name + "c"), []byte{0, 0, 2, 0, 0}, 403, "exceeded quota: counts,"},
		{"existing configmap: charged, then AlreadyExists", "POST", coll + "configmaps", "", cm(name), []byte{0, 0, 0, 0, 0}, 409, "already exists"},
		{"dry run: not charged", "POST", coll + "configmaps", "dryRun=All", cm(name + "d"), []byte{0, 0, 0, 0, 0}, 201, ""},
		{"dry run over hard", "POST", coll + "configmaps", "dryRun=All", cm(name + "d"), []byte{2, 0, 0, 0, 0}, 403, "exceeded quota: objects,"},
		{"invalid configmap: refused before admission", "POST", coll + "configmaps", "", cm("-bad-"), []byte{0, 0, 0, 0, 0}, 422, ""},
		{"update: nothing charged", "PUT", coll + "configmaps/" + name, "", cm(name), []byte{0, 0, 0, 0, 0}, 200, ""},
		{"delete: nothing given back", "DELETE", coll + "configmaps/" + name, "", nil, []byte{1, 1, 1, 1, 1}, 200, ""},
		{"pod created and charged", "POST", coll + "pods", "", pod, []byte{0, 1, 0, 1, 0}, 201, ""},
		{"pod over pods' hard", "POST", coll + "pods", "", pod, []byte{0, 2, 0, 0, 0}, 403, "exceeded quota: objects,"},
		{"secret created and charged", "POST", coll + "secrets", "", secret, []byte{0, 0, 0, 0, 1}, 201, ""},
		{"secret over count/secrets", "POST", coll + "secrets", "", secret, []byte{0, 0, 0, 0, 2}, 403, "exceeded quota: counts,"},
	} {
		req := fuzzRequest{method: c.method, path: c.path, query: map[string][]string{}, contentType: "application/json", body: c.body}
		if c.query != "" {
			k, v, _ := strings.Cut(c.query, "=")
			req.query.Set(k, v)
		}
		// The quotas exist and are cached before the checked request.
		ctx := context.Background()
		for settled := false; !settled; {
			var err error
			if settled, err = s.setUpQuotas(ctx, &input{}); err != nil {
				t.Fatal(err)
			}
		}
		var code int
		var body []byte
		t.Run(c.what, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			settled, err := s.setUpQuotas(ctx, &input{data: c.used})
			if err != nil || !settled {
				t.Fatalf("setting up the quotas: settled %v, %v", settled, err)
			}
			before, err := s.quotaUsage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			code, body = s.check(t, req)
			after, err := s.quotaUsage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			checkQuotaCharges(t, req, code, body, before, after)
			if code != c.wantCode || !strings.Contains(string(body), c.wantInBody) {
				t.Errorf("%s %s: %d %s, want %d with %q", c.method, c.path, code, body, c.wantCode, c.wantInBody)
			}
		})
	}
}
