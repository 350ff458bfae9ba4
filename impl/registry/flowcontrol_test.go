package registry

import (
	"context"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver/flowcontrol"
)

func userFlowSchema() *flowcontrolv1.FlowSchema {
	return &flowcontrolv1.FlowSchema{ObjectMeta: metav1.ObjectMeta{Name: "alice-slow"},
		Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "slow"},
			DistinguisherMethod:        &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects: []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: "alice"}}},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"get", "list"}, APIGroups: []string{""},
					Resources: []string{"pods"}, Namespaces: []string{"default"}}},
				NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{Verbs: []string{"*"}, NonResourceURLs: []string{"/metrics", "/logs/*"}}},
			}},
		}}
}

func TestFlowSchemas(t *testing.T) {
	ctx := context.Background()
	fss := find(t, flowcontrolv1.SchemeGroupVersion, "flowschemas")
	fs := userFlowSchema()
	fss.Strategy.Default(fs)
	if fs.Spec.MatchingPrecedence != 1000 {
		t.Errorf("matchingPrecedence defaulted to %d, want 1000", fs.Spec.MatchingPrecedence)
	}
	wantErrors(t, fss.Strategy.Validate(ctx, fs))

	fs.CreationTimestamp = metav1.NewTime(testNow.Add(-5 * time.Hour))
	assertRow(t, fss, fs, "Name,PriorityLevel,MatchingPrecedence,DistinguisherMethod,Age,MissingPL",
		"alice-slow", "slow", int64(1000), "ByUser", "5h", "?")
	fs.Status.Conditions = []flowcontrolv1.FlowSchemaCondition{{Type: flowcontrolv1.FlowSchemaConditionDangling, Status: flowcontrolv1.ConditionTrue}}
	fs.Spec.DistinguisherMethod = nil
	assertRow(t, fss, fs, "Name,PriorityLevel,MatchingPrecedence,DistinguisherMethod,Age,MissingPL",
		"alice-slow", "slow", int64(1000), "*", "5h", "True")

	for _, tc := range []struct {
		name  string
		edit  func(*flowcontrolv1.FlowSchema)
		wants []string
	}{
		{"precedence too high", func(fs *flowcontrolv1.FlowSchema) { fs.Spec.MatchingPrecedence = 10001 }, []string{invalid + " spec.matchingPrecedence"}},
		{"precedence negative", func(fs *flowcontrolv1.FlowSchema) { fs.Spec.MatchingPrecedence = -1 }, []string{invalid + " spec.matchingPrecedence"}},
		{"precedence 1 is exempt's", func(fs *flowcontrolv1.FlowSchema) { fs.Spec.MatchingPrecedence = 1 }, []string{invalid + " spec.matchingPrecedence"}},
		{"no level", func(fs *flowcontrolv1.FlowSchema) { fs.Spec.PriorityLevelConfiguration.Name = "" },
			[]string{required + " spec.priorityLevelConfiguration.name"}},
		{"bad level name", func(fs *flowcontrolv1.FlowSchema) { fs.Spec.PriorityLevelConfiguration.Name = "Slow!" },
			[]string{invalid + " spec.priorityLevelConfiguration.name"}},
		{"bad distinguisher", func(fs *flowcontrolv1.FlowSchema) {
			fs.Spec.DistinguisherMethod = &flowcontrolv1.FlowDistinguisherMethod{Type: "ByPod"}
		}, []string{notSupported + " spec.distinguisherMethod.type"}},
		{"no subjects, no rules", func(fs *flowcontrolv1.FlowSchema) {
			fs.Spec.Rules[0] = flowcontrolv1.PolicyRulesWithSubjects{}
		}, []string{required + " spec.rules[0]", required + " spec.rules[0].subjects"}},
		{"subjects", func(fs *flowcontrolv1.FlowSchema) {
			fs.Spec.Rules[0].Subjects = []flowcontrolv1.Subject{
				{Kind: flowcontrolv1.SubjectKindUser},
				{Kind: flowcontrolv1.SubjectKindGroup, Group: &flowcontrolv1.GroupSubject{Name: "g"}, User: &flowcontrolv1.UserSubject{Name: "u"}},
				{Kind: flowcontrolv1.SubjectKindServiceAccount, ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Name: "*"}},
				{Kind: flowcontrolv1.SubjectKindServiceAccount, ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Name: "Bad_Name", Namespace: "ns"}},
				{Kind: "Robot"},
			}
		}, []string{required + " spec.rules[0].subjects[0].user", forbidden + " spec.rules[0].subjects[1].user",
			required + " spec.rules[0].subjects[2].serviceAccount.namespace", invalid + " spec.rules[0].subjects[3].serviceAccount.name",
			notSupported + " spec.rules[0].subjects[4].kind"}},
		{"resource rule lists", func(fs *flowcontrolv1.FlowSchema) {
			fs.Spec.Rules[0].ResourceRules = []flowcontrolv1.ResourcePolicyRule{
				{},
				{Verbs: []string{"*", "get"}, APIGroups: []string{"*", "apps"}, Resources: []string{"pods", "*"}, Namespaces: []string{"*", "a"}},
				{Verbs: []string{"escalate"}, APIGroups: []string{""}, Resources: []string{"pods"}, Namespaces: []string{"Not_A_Label"}},
				{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"nodes"}, ClusterScope: true},
			}
		}, []string{required + " spec.rules[0].resourceRules[0].verbs", required + " spec.rules[0].resourceRules[0].apiGroups",
			required + " spec.rules[0].resourceRules[0].resources", required + " spec.rules[0].resourceRules[0].namespaces",
			invalid + " spec.rules[0].resourceRules[1].verbs", invalid + " spec.rules[0].resourceRules[1].apiGroups",
			invalid + " spec.rules[0].resourceRules[1].resources", invalid + " spec.rules[0].resourceRules[1].namespaces",
			notSupported + " spec.rules[0].resourceRules[2].verbs", invalid + " spec.rules[0].resourceRules[2].namespaces[0]"}},
		{"non-resource URLs", func(fs *flowcontrolv1.FlowSchema) {
			fs.Spec.Rules[0].NonResourceRules = []flowcontrolv1.NonResourcePolicyRule{
				{Verbs: []string{"get"}, NonResourceURLs: []string{"healthz", "/a b", "//x", "/x*", "/a/*/b", "/", "/ok/*"}},
				{Verbs: []string{"get"}, NonResourceURLs: []string{"*", "/x"}},
				{},
			}
		}, []string{invalid + " spec.rules[0].nonResourceRules[0].nonResourceURLs[0]", invalid + " spec.rules[0].nonResourceRules[0].nonResourceURLs[1]",
			invalid + " spec.rules[0].nonResourceRules[0].nonResourceURLs[2]", invalid + " spec.rules[0].nonResourceRules[0].nonResourceURLs[3]",
			invalid + " spec.rules[0].nonResourceRules[0].nonResourceURLs[4]", invalid + " spec.rules[0].nonResourceRules[1].nonResourceURLs",
			required + " spec.rules[0].nonResourceRules[2].verbs", required + " spec.rules[0].nonResourceRules[2].nonResourceURLs"}},
		{"duplicate conditions", func(fs *flowcontrolv1.FlowSchema) {
			fs.Status.Conditions = []flowcontrolv1.FlowSchemaCondition{{Type: "Dangling"}, {Type: "Dangling"}, {}}
		}, []string{duplicate + " status.conditions[1].type", required + " status.conditions[2].type"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := userFlowSchema()
			fss.Strategy.Default(bad)
			tc.edit(bad)
			wantErrors(t, fss.Strategy.Validate(ctx, bad), tc.wants...)
		})
	}

	// The mandatory schemas' specs are fixed; the suggested ones are not.
	for _, d := range flowcontrol.DefaultFlowSchemas() {
		wantErrors(t, fss.Strategy.Validate(ctx, d))
		changed := d.DeepCopy()
		changed.Spec.MatchingPrecedence = 9999
		var want []string
		if flowcontrol.MandatoryFlowSchema(d.Name) != nil {
			want = []string{invalid + " spec"}
		}
		wantErrors(t, fss.Strategy.Validate(ctx, changed), want...)
	}

	// A status write keeps the spec; a spec write keeps the status.
	old := userFlowSchema()
	old.Status.Conditions = []flowcontrolv1.FlowSchemaCondition{{Type: flowcontrolv1.FlowSchemaConditionDangling, Status: flowcontrolv1.ConditionFalse}}
	upd := old.DeepCopy()
	upd.Spec.MatchingPrecedence = 10
	upd.Status = flowcontrolv1.FlowSchemaStatus{}
	fss.Strategy.PrepareForUpdate(ctx, upd, old)
	if len(upd.Status.Conditions) != 1 || upd.Spec.MatchingPrecedence != 10 {
		t.Errorf("spec update: %+v", upd)
	}
	st := old.DeepCopy()
	st.Spec.MatchingPrecedence = 10
	st.Status.Conditions[0].Status = flowcontrolv1.ConditionTrue
	fss.Status.PrepareForUpdate(ctx, st, old)
	if st.Spec.MatchingPrecedence != old.Spec.MatchingPrecedence || st.Status.Conditions[0].Status != flowcontrolv1.ConditionTrue {
		t.Errorf("status update: %+v", st)
	}
}

func queuingLevel(name string) *flowcontrolv1.PriorityLevelConfiguration {
	return &flowcontrolv1.PriorityLevelConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{LimitResponse: flowcontrolv1.LimitResponse{
				Type: flowcontrolv1.LimitResponseTypeQueue, Queuing: &flowcontrolv1.QueuingConfiguration{}}}}}
}

func TestPriorityLevelConfigurations(t *testing.T) {
	ctx := context.Background()
	pls := find(t, flowcontrolv1.SchemeGroupVersion, "prioritylevelconfigurations")
	p := queuingLevel("slow")
	pls.Strategy.Default(p)
	l := p.Spec.Limited
	if *l.NominalConcurrencyShares != 30 || *l.LendablePercent != 0 || l.BorrowingLimitPercent != nil ||
		*l.LimitResponse.Queuing != (flowcontrolv1.QueuingConfiguration{Queues: 64, HandSize: 8, QueueLengthLimit: 50}) {
		t.Errorf("defaults: %+v %+v", l, l.LimitResponse.Queuing)
	}
	wantErrors(t, pls.Strategy.Validate(ctx, p))
	// v1 keeps an explicit 0 shares.
	zero := queuingLevel("zero")
	zero.Spec.Limited.NominalConcurrencyShares = ptr(int32(0))
	pls.Strategy.Default(zero)
	if *zero.Spec.Limited.NominalConcurrencyShares != 0 {
		t.Errorf("explicit 0 shares defaulted to %d", *zero.Spec.Limited.NominalConcurrencyShares)
	}
	wantErrors(t, pls.Strategy.Validate(ctx, zero))

	p.CreationTimestamp = metav1.NewTime(testNow.Add(-3 * time.Minute))
	const cols = "Name,Type,NominalConcurrencyShares,Queues,HandSize,QueueLengthLimit,Age"
	assertRow(t, pls, p, cols, "slow", "Limited", int64(30), int64(64), int64(8), int64(50), "3m")
	var exempt, catchAll *flowcontrolv1.PriorityLevelConfiguration
	for _, d := range flowcontrol.DefaultPriorityLevels() {
		switch d.Name {
		case "exempt":
			exempt = d.DeepCopy()
		case "catch-all":
			catchAll = d.DeepCopy()
		}
	}
	exempt.CreationTimestamp, catchAll.CreationTimestamp = p.CreationTimestamp, p.CreationTimestamp
	assertRow(t, pls, exempt, cols, "exempt", "Exempt", "<none>", "<none>", "<none>", "<none>", "3m")
	assertRow(t, pls, catchAll, cols, "catch-all", "Limited", int64(5), "<none>", "<none>", "<none>", "3m")

	for _, tc := range []struct {
		name  string
		edit  func(*flowcontrolv1.PriorityLevelConfiguration)
		wants []string
	}{
		{"exempt type needs the name", func(p *flowcontrolv1.PriorityLevelConfiguration) {
			p.Spec = flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementExempt}
		}, []string{invalid + " spec.type"}},
		{"limited without limits", func(p *flowcontrolv1.PriorityLevelConfiguration) { p.Spec.Limited = nil },
			[]string{required + " spec.limited"}},
		{"both", func(p *flowcontrolv1.PriorityLevelConfiguration) {
			p.Spec.Exempt = &flowcontrolv1.ExemptPriorityLevelConfiguration{}
		}, []string{forbidden + " spec.exempt"}},
		{"unknown type", func(p *flowcontrolv1.PriorityLevelConfiguration) { p.Spec.Type = "Sometimes" },
			[]string{notSupported + " spec.type"}},
		{"numbers", func(p *flowcontrolv1.PriorityLevelConfiguration) {
			p.Spec.Limited.NominalConcurrencyShares = ptr(int32(-1))
			p.Spec.Limited.LendablePercent = ptr(int32(101))
			p.Spec.Limited.BorrowingLimitPercent = ptr(int32(-1))
		}, []string{invalid + " spec.limited.nominalConcurrencyShares", invalid + " spec.limited.lendablePercent",
			invalid + " spec.limited.borrowingLimitPercent"}},
		{"queuing", func(p *flowcontrolv1.PriorityLevelConfiguration) {
			*p.Spec.Limited.LimitResponse.Queuing = flowcontrolv1.QueuingConfiguration{Queues: 0, HandSize: -1, QueueLengthLimit: 0}
		}, []string{invalid + " spec.limited.limitResponse.queuing.queues", invalid + " spec.limited.limitResponse.queuing.handSize",
			invalid + " spec.limited.limitResponse.queuing.queueLengthLimit"}},
		{"hand bigger than deck", func(p *flowcontrolv1.PriorityLevelConfiguration) {
			*p.Spec.Limited.LimitResponse.Queuing = flowcontrolv1.QueuingConfiguration{Queues: 4, HandSize: 5, QueueLengthLimit: 1}
		}, []string{invalid + " spec.limited.limitResponse.queuing.handSize"}},
		{"too much entropy", func(p *flowcontrolv1.PriorityLevelConfiguration) {
			// log2(128) * 9 = 63 bits > 60.
			*p.Spec.Limited.LimitResponse.Queuing = flowcontrolv1.QueuingConfiguration{Queues: 128, HandSize: 9, QueueLengthLimit: 1}
		}, []string{invalid + " spec.limited.limitResponse.queuing.handSize"}},
		{"too many queues", func(p *flowcontrolv1.PriorityLevelConfiguration) {
			*p.Spec.Limited.LimitResponse.Queuing = flowcontrolv1.QueuingConfiguration{Queues: 10_000_001, HandSize: 1, QueueLengthLimit: 1}
		}, []string{invalid + " spec.limited.limitResponse.queuing.queues"}},
		{"reject with queuing", func(p *flowcontrolv1.PriorityLevelConfiguration) {
			p.Spec.Limited.LimitResponse.Type = flowcontrolv1.LimitResponseTypeReject
		}, []string{forbidden + " spec.limited.limitResponse.queuing"}},
		{"queue without queuing", func(p *flowcontrolv1.PriorityLevelConfiguration) { p.Spec.Limited.LimitResponse.Queuing = nil },
			[]string{required + " spec.limited.limitResponse.queuing"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := queuingLevel("slow")
			pls.Strategy.Default(bad)
			tc.edit(bad)
			wantErrors(t, pls.Strategy.Validate(ctx, bad), tc.wants...)
		})
	}

	// Mandatory levels: catch-all is fixed; exempt is Exempt, but its
	// shares and lendable percentage may change.
	wantErrors(t, pls.Strategy.Validate(ctx, exempt))
	wantErrors(t, pls.Strategy.Validate(ctx, catchAll))
	ex := exempt.DeepCopy()
	ex.Spec.Exempt.NominalConcurrencyShares, ex.Spec.Exempt.LendablePercent = ptr(int32(10)), ptr(int32(50))
	wantErrors(t, pls.Strategy.Validate(ctx, ex))
	ex.Spec.Exempt.LendablePercent = ptr(int32(150))
	wantErrors(t, pls.Strategy.Validate(ctx, ex), invalid+" spec.exempt.lendablePercent")
	ca := catchAll.DeepCopy()
	ca.Spec.Limited.NominalConcurrencyShares = ptr(int32(50))
	wantErrors(t, pls.Strategy.Validate(ctx, ca), invalid+" spec")
	ex = exempt.DeepCopy()
	ex.Spec = p.Spec
	wantErrors(t, pls.Strategy.Validate(ctx, ex), invalid+" spec.type", invalid+" spec")
	for _, d := range flowcontrol.DefaultPriorityLevels() {
		wantErrors(t, pls.Strategy.Validate(ctx, d))
	}
}
