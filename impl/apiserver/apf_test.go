package apiserver_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver"
	"github.com/kubeproof/kubeproof/impl/apiserver/admission"
	"github.com/kubeproof/kubeproof/impl/apiserver/flowcontrol"
)

// TestFlowControlObjectsBootstrapped: at start the server writes
// kube-apiserver's mandatory and suggested objects (autoupdate-spec
// "true", created by the producer's field manager through the loopback
// client, UIDs of their own), each FlowSchema gets Dangling=False, kubectl's
// tables are served; a changed suggested object is put back while its
// annotation is "true" and left alone once it is "false"; a mandatory
// object's spec cannot be changed (422) and, deleted, comes back.
func TestFlowControlObjectsBootstrapped(t *testing.T) {
	e := newEnv(t, nil)
	fc := e.cs.FlowcontrolV1()
	levels, err := fc.PriorityLevelConfigurations().List(ctx(t), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(levels.Items) != len(flowcontrol.DefaultPriorityLevels()) {
		t.Fatalf("%d priority levels, want %d", len(levels.Items), len(flowcontrol.DefaultPriorityLevels()))
	}
	for _, p := range levels.Items {
		if p.Annotations[flowcontrolv1.AutoUpdateAnnotationKey] != "true" || p.UID == "" || p.UID == flowcontrol.UID("prioritylevelconfigurations", p.Name) || p.Generation != 1 {
			t.Errorf("level %s: annotations %v uid %s generation %d", p.Name, p.Annotations, p.UID, p.Generation)
		}
		if mf := p.ManagedFields; len(mf) != 1 || mf[0].Manager != "api-priority-and-fairness-config-producer-v1" ||
			mf[0].Operation != metav1.ManagedFieldsOperationUpdate || mf[0].Subresource != "" {
			t.Errorf("level %s managedFields: %+v, want the producer's create", p.Name, mf)
		}
	}
	eventually(t, "every FlowSchema has Dangling=False", func() bool {
		list, err := fc.FlowSchemas().List(ctx(t), metav1.ListOptions{})
		if err != nil || len(list.Items) != len(flowcontrol.DefaultFlowSchemas()) {
			return false
		}
		for _, fs := range list.Items {
			if len(fs.Status.Conditions) != 1 || fs.Status.Conditions[0].Type != flowcontrolv1.FlowSchemaConditionDangling ||
				fs.Status.Conditions[0].Status != flowcontrolv1.ConditionFalse {
				return false
			}
		}
		return true
	})
	// The condition is server-side applied to the status, as
	// kube-apiserver's controller does, by its field manager.
	list, err := fc.FlowSchemas().List(ctx(t), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, fs := range list.Items {
		if got, want := fs.Status.Conditions[0].Message, fmt.Sprintf("This FlowSchema references the PriorityLevelConfiguration object named %q and it exists",
			fs.Spec.PriorityLevelConfiguration.Name); got != want {
			t.Errorf("FlowSchema %s: Dangling=False message %q, want %q", fs.Name, got, want)
		}
		applied, created := false, false
		for _, mf := range fs.ManagedFields {
			applied = applied || mf.Manager == "api-priority-and-fairness-config-consumer-v1" &&
				mf.Operation == metav1.ManagedFieldsOperationApply && mf.Subresource == "status"
			created = created || mf.Manager == "api-priority-and-fairness-config-producer-v1" &&
				mf.Operation == metav1.ManagedFieldsOperationUpdate && mf.Subresource == ""
		}
		if !applied || !created || len(fs.ManagedFields) != 2 {
			t.Errorf("FlowSchema %s: managedFields %+v, want the producer's create and api-priority-and-fairness-config-consumer-v1's status apply", fs.Name, fs.ManagedFields)
		}
	}

	table := func(path string) metav1.Table {
		r := e.do("GET", path, nil, "Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
		if r.code != http.StatusOK {
			t.Fatalf("%s as table: %d %s", path, r.code, r.body)
		}
		var tb metav1.Table
		if err := json.Unmarshal(r.body, &tb); err != nil {
			t.Fatal(err)
		}
		return tb
	}
	columns := func(tb metav1.Table) string {
		var names []string
		for _, c := range tb.ColumnDefinitions {
			names = append(names, c.Name)
		}
		return strings.Join(names, ",")
	}
	tb := table("/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/global-default")
	if got := columns(tb); got != "Name,PriorityLevel,MatchingPrecedence,DistinguisherMethod,Age,MissingPL" {
		t.Errorf("flowschemas columns %s", got)
	}
	if c := tb.Rows[0].Cells; fmt.Sprint([]any{c[0], c[1], c[2], c[3], c[5]}) != "[global-default global-default 9900 ByUser False]" {
		t.Errorf("flowschemas row %v", c)
	}
	tb = table("/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations/workload-low")
	if got := columns(tb); got != "Name,Type,NominalConcurrencyShares,Queues,HandSize,QueueLengthLimit,Age" {
		t.Errorf("prioritylevelconfigurations columns %s", got)
	}
	if c := tb.Rows[0].Cells; fmt.Sprint(c[:6]) != "[workload-low Limited 100 128 6 50]" {
		t.Errorf("prioritylevelconfigurations row %v", c)
	}

	// Mandatory: the spec is fixed; deleted, it comes back.
	ca, err := fc.FlowSchemas().Get(ctx(t), "catch-all", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ca.Spec.MatchingPrecedence = 5000
	if _, err := fc.FlowSchemas().Update(ctx(t), ca, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("changing catch-all's spec: %v, want 422", err)
	}
	if err := fc.PriorityLevelConfigurations().Delete(ctx(t), "catch-all", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the deleted catch-all level is created again", func() bool {
		_, err := fc.PriorityLevelConfigurations().Get(ctx(t), "catch-all", metav1.GetOptions{})
		return err == nil
	})
	if _, err := fc.PriorityLevelConfigurations().Create(ctx(t), &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "bad"},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{LimitResponse: flowcontrolv1.LimitResponse{
				Type: flowcontrolv1.LimitResponseTypeQueue, Queuing: &flowcontrolv1.QueuingConfiguration{Queues: 4, HandSize: 5}}}},
	}, metav1.CreateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.limited.limitResponse.queuing.handSize") {
		t.Fatalf("handSize over queues: %v, want 422 on spec.limited.limitResponse.queuing.handSize", err)
	}
}

// TestSuggestedObjectsAutoUpdate: a restarted server (a second one on the
// same storage) puts back a suggested object's spec while its
// autoupdate-spec annotation is "true", leaves it once "false", leaves
// the exempt level's shares as the administrator set them, and deletes an
// object it suggested once (annotation "true") that it no longer
// suggests.
func TestSuggestedObjectsAutoUpdate(t *testing.T) {
	e := newEnv(t, nil)
	fc := e.cs.FlowcontrolV1()
	get := func(name string) *flowcontrolv1.PriorityLevelConfiguration {
		p, err := fc.PriorityLevelConfigurations().Get(ctx(t), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	wl := get("workload-low")
	wl.Spec.Limited.NominalConcurrencyShares = ptr32(7)
	if _, err := fc.PriorityLevelConfigurations().Update(ctx(t), wl, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	gd := get("global-default")
	gd.Annotations[flowcontrolv1.AutoUpdateAnnotationKey] = "false"
	gd.Spec.Limited.NominalConcurrencyShares = ptr32(7)
	if _, err := fc.PriorityLevelConfigurations().Update(ctx(t), gd, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	old := &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "retired", Annotations: map[string]string{flowcontrolv1.AutoUpdateAnnotationKey: "true"}},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject}}},
	}
	if _, err := fc.PriorityLevelConfigurations().Create(ctx(t), old, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ex := get("exempt")
	ex.Spec.Exempt.NominalConcurrencyShares = ptr32(10)
	if _, err := fc.PriorityLevelConfigurations().Update(ctx(t), ex, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	mine := old.DeepCopy()
	mine.Name, mine.Annotations = "mine", nil
	if _, err := fc.PriorityLevelConfigurations().Create(ctx(t), mine, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// A second server on the same storage runs the ensurer at its start.
	newEnvAt(t, e.prefix, nil)
	if p := get("workload-low"); *p.Spec.Limited.NominalConcurrencyShares != 100 || p.Generation != 3 {
		t.Errorf("workload-low after the ensurer: shares %d generation %d, want 100 and 3", *p.Spec.Limited.NominalConcurrencyShares, p.Generation)
	}
	if p := get("global-default"); *p.Spec.Limited.NominalConcurrencyShares != 7 {
		t.Errorf("global-default with autoupdate false was changed: shares %d", *p.Spec.Limited.NominalConcurrencyShares)
	}
	if _, err := fc.PriorityLevelConfigurations().Get(ctx(t), "retired", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the retired suggestion: %v, want deleted", err)
	}
	get("mine")
	if p := get("exempt"); *p.Spec.Exempt.NominalConcurrencyShares != 10 {
		t.Errorf("the exempt level's shares were reset to %d; they are the administrator's", *p.Spec.Exempt.NominalConcurrencyShares)
	}
}

func ptr32(v int32) *int32 { return &v }

// metricLine is what follows prefix on its line of /metrics.
func metricLine(t *testing.T, e *env, prefix string) string {
	t.Helper()
	for _, line := range strings.Split(string(e.do("GET", "/metrics", nil).body), "\n") {
		if rest, ok := strings.CutPrefix(line, prefix); ok {
			return rest
		}
	}
	t.Fatalf("/metrics has no line %q", prefix)
	return ""
}

// TestFlowSchemaChangesWhatAUserGets: a FlowSchema sending alice to a new
// priority level that rejects over its seats makes alice's requests carry
// that level's UID and, once it is full, get 429 (concurrency-limit); a
// FlowSchema naming a missing level is Dangling=True and ignored; deleting
// alice's FlowSchema while her requests hold the level's seats lets them
// finish, and gives her the defaults back.
func TestFlowSchemaChangesWhatAUserGets(t *testing.T) {
	g := &gate{entered: make(chan struct{}, 16), release: make(chan struct{})}
	e := newEnv(t, func(c *apiserver.Config) {
		// 16 seats: tiny's nominal share is 1; it neither lends nor
		// borrows, so its current limit is its nominal one whatever the
		// borrowing adjustments (on every configuration, from the demand
		// this test makes) do to the other levels. (With 2, idle
		// global-default may be adjusted to a current limit of 0, which
		// starts nothing from its queues, as kube-apiserver's: alice's
		// requests there would wait until they time out.)
		c.MaxMutatingRequestsInFlight = 8
		c.MaxRequestsInFlight = 8
		c.AdmissionMutators = []admission.Mutator{g}
	})
	fc := e.cs.FlowcontrolV1()
	pl, err := fc.PriorityLevelConfigurations().Create(ctx(t), &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "tiny"},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{NominalConcurrencyShares: ptr32(1),
				LendablePercent: ptr32(0), BorrowingLimitPercent: ptr32(0),
				LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	schema := func(name, level string) *flowcontrolv1.FlowSchema {
		return &flowcontrolv1.FlowSchema{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: flowcontrolv1.FlowSchemaSpec{
				PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: level},
				MatchingPrecedence:         500,
				Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
					Subjects: []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: "alice"}}},
					ResourceRules: []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"},
						Resources: []string{"*"}, Namespaces: []string{"*"}, ClusterScope: true}},
				}},
			}}
	}
	// A dangling schema first (its level does not exist): ignored.
	if _, err := fc.FlowSchemas().Create(ctx(t), schema("alice-dangling", "nowhere"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "alice-dangling is Dangling=True", func() bool {
		fs, err := fc.FlowSchemas().Get(ctx(t), "alice-dangling", metav1.GetOptions{})
		return err == nil && len(fs.Status.Conditions) == 1 && fs.Status.Conditions[0].Status == flowcontrolv1.ConditionTrue &&
			fs.Status.Conditions[0].Reason == "NotFound"
	})
	// kube-apiserver's message (kubectl describe shows it).
	if dangling, err := fc.FlowSchemas().Get(ctx(t), "alice-dangling", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	} else if got, want := dangling.Status.Conditions[0].Message,
		`This FlowSchema references the PriorityLevelConfiguration object named "nowhere" but there is no such object`; got != want {
		t.Errorf("Dangling=True message %q, want %q", got, want)
	}
	list := func(user string) response {
		return e.do("GET", "/api/v1/namespaces/default/configmaps", nil, "Impersonate-User", user)
	}
	gd, err := fc.PriorityLevelConfigurations().Get(ctx(t), "global-default", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	globalDefault := string(gd.UID)
	if got := list("alice").header.Get("X-Kubernetes-PF-PriorityLevel-UID"); got != globalDefault {
		t.Fatalf("alice with a dangling schema: level %s, want global-default", got)
	}

	fs, err := fc.FlowSchemas().Create(ctx(t), schema("alice", "tiny"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "alice's requests go to tiny", func() bool {
		r := list("alice")
		return r.header.Get("X-Kubernetes-PF-PriorityLevel-UID") == string(pl.UID) &&
			r.header.Get("X-Kubernetes-PF-FlowSchema-UID") == string(fs.UID)
	})
	// Hold alice's creates until one is turned away: tiny rejects at once
	// over its current limit (its own seat and what it borrows).
	var current int
	if _, err := fmt.Sscan(metricLine(t, e, `apiserver_flowcontrol_current_limit_seats{priority_level="tiny"} `), &current); err != nil || current < 1 {
		t.Fatalf("tiny's current limit: %d, %v", current, err)
	}
	responses := make(chan response, 16)
	var rejected response
	held := 0
	for i := 0; rejected.code == 0; i++ {
		if i == 12 {
			t.Fatal("12 of alice's requests all got a seat at a level of 1 share")
		}
		go func() {
			responses <- e.do("POST", "/api/v1/namespaces/default/configmaps",
				[]byte(fmt.Sprintf(`{"metadata":{"name":"alice-%d"}}`, i)), "Impersonate-User", "alice")
		}()
		select {
		case <-g.entered:
			held++
		case rejected = <-responses:
		}
	}
	expectStatus(t, rejected, http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests, "Too many requests")
	if held != current {
		t.Errorf("%d of alice's requests held seats, want tiny's current limit %d", held, current)
	}
	if got := rejected.header.Get("X-Kubernetes-PF-PriorityLevel-UID"); got != string(pl.UID) {
		t.Errorf("the rejection names level %s, want tiny's %s", got, pl.UID)
	}
	metrics := string(e.do("GET", "/metrics", nil).body)
	if want := `apiserver_flowcontrol_rejected_requests_total{flow_schema="alice",priority_level="tiny",reason="concurrency-limit"} 1`; !strings.Contains(metrics, want) {
		t.Errorf("/metrics lacks %s", want)
	}

	if err := fc.FlowSchemas().Delete(ctx(t), "alice", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	close(g.release)
	for range held {
		if r := <-responses; r.code != http.StatusCreated {
			t.Errorf("held create: %d %s", r.code, r.body)
		}
	}
	eventually(t, "alice is back in global-default", func() bool {
		return list("alice").header.Get("X-Kubernetes-PF-PriorityLevel-UID") == globalDefault
	})
}
