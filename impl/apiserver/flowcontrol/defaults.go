package flowcontrol

import (
	"crypto/sha1"
	"fmt"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeproof/kubeproof/impl/apiserver/auth/bootstrappolicy"
)

// The service account groups and the kube-system namespace, as the
// service account authenticator names them.
const (
	allServiceAccountsGroup = "system:serviceaccounts"
	kubeSystem              = metav1.NamespaceSystem
)

// DefaultPriorityLevels are kube-apiserver's mandatory and suggested
// PriorityLevelConfigurations (flowcontrol.apiserver.k8s.io/v1), with the
// shares, lendable percentages, queuing parameters and limit responses it
// writes at startup.
func DefaultPriorityLevels() []*flowcontrolv1.PriorityLevelConfiguration {
	return []*flowcontrolv1.PriorityLevelConfiguration{
		priorityLevel(flowcontrolv1.PriorityLevelConfigurationNameExempt, flowcontrolv1.PriorityLevelConfigurationSpec{
			Type:   flowcontrolv1.PriorityLevelEnablementExempt,
			Exempt: &flowcontrolv1.ExemptPriorityLevelConfiguration{NominalConcurrencyShares: ptr(0), LendablePercent: ptr(0)},
		}),
		// Not queued: over its limit a request is turned away at once.
		limitedLevel(flowcontrolv1.PriorityLevelConfigurationNameCatchAll, 5, 0, nil),
		// Node and system components that keep the cluster and its
		// running pods alive.
		limitedLevel("system", 30, 33, queuing(64, 6, 50)),
		// Node health (node status, node Leases), kept apart from
		// "system" so that pod start-up load cannot starve it.
		limitedLevel("node-high", 40, 25, queuing(64, 6, 50)),
		limitedLevel("leader-election", 10, 0, queuing(16, 4, 50)),
		limitedLevel("workload-high", 40, 50, queuing(128, 6, 50)),
		limitedLevel("workload-low", 100, 90, queuing(128, 6, 50)),
		limitedLevel("global-default", 20, 50, queuing(128, 6, 50)),
	}
}

// DefaultFlowSchemas are kube-apiserver's mandatory and suggested
// FlowSchemas, in its order of matching precedence.
func DefaultFlowSchemas() []*flowcontrolv1.FlowSchema {
	everything := everythingRules()
	return []*flowcontrolv1.FlowSchema{
		// Administrators (system:masters) are never held back.
		flowSchema(flowcontrolv1.FlowSchemaNameExempt, flowcontrolv1.PriorityLevelConfigurationNameExempt, 1, "",
			withSubjects(everything, groups(bootstrappolicy.SystemMastersGroup)...)),
		// Health probes of anyone are never held back.
		flowSchema("probes", flowcontrolv1.PriorityLevelConfigurationNameExempt, 2, "",
			flowcontrolv1.PolicyRulesWithSubjects{
				Subjects: groups(bootstrappolicy.UnauthenticatedGroup, bootstrappolicy.AuthenticatedGroup),
				NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{
					{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz", "/readyz", "/livez"}},
				},
			}),
		flowSchema("system-leader-election", "leader-election", 100, flowcontrolv1.FlowDistinguisherMethodByUserType,
			flowcontrolv1.PolicyRulesWithSubjects{
				Subjects: append(users(bootstrappolicy.KubeControllerManager, bootstrappolicy.KubeScheduler),
					kubeSystemServiceAccounts(flowcontrolv1.NameAll)...),
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{
					resourceRule([]string{"get", "create", "update"}, coordinationv1.GroupName, []string{"leases"}, flowcontrolv1.NamespaceEvery, false),
				},
			}),
		// The endpoints controller's writes, which would otherwise be
		// taken for the leader election of workload-leader-election.
		flowSchema("endpoint-controller", "workload-high", 150, flowcontrolv1.FlowDistinguisherMethodByUserType,
			flowcontrolv1.PolicyRulesWithSubjects{
				Subjects: append(users(bootstrappolicy.KubeControllerManager),
					kubeSystemServiceAccounts("endpoint-controller", "endpointslicemirroring-controller")...),
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{
					resourceRule([]string{"get", "create", "update"}, corev1.GroupName, []string{"endpoints"}, flowcontrolv1.NamespaceEvery, false),
				},
			}),
		flowSchema("workload-leader-election", "leader-election", 200, flowcontrolv1.FlowDistinguisherMethodByUserType,
			flowcontrolv1.PolicyRulesWithSubjects{
				Subjects: kubeSystemServiceAccounts(flowcontrolv1.NameAll),
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{
					resourceRule([]string{"get", "create", "update"}, corev1.GroupName, []string{"endpoints", "configmaps"}, flowcontrolv1.NamespaceEvery, false),
					resourceRule([]string{"get", "create", "update"}, coordinationv1.GroupName, []string{"leases"}, flowcontrolv1.NamespaceEvery, false),
				},
			}),
		flowSchema("system-node-high", "node-high", 400, flowcontrolv1.FlowDistinguisherMethodByUserType,
			flowcontrolv1.PolicyRulesWithSubjects{
				Subjects: groups(bootstrappolicy.NodesGroup),
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{
					resourceRule([]string{flowcontrolv1.VerbAll}, corev1.GroupName, []string{"nodes", "nodes/status"}, flowcontrolv1.NamespaceEvery, true),
					resourceRule([]string{flowcontrolv1.VerbAll}, coordinationv1.GroupName, []string{"leases"}, flowcontrolv1.NamespaceEvery, false),
				},
			}),
		flowSchema("system-nodes", "system", 500, flowcontrolv1.FlowDistinguisherMethodByUserType,
			withSubjects(everything, groups(bootstrappolicy.NodesGroup)...)),
		flowSchema("kube-controller-manager", "workload-high", 800, flowcontrolv1.FlowDistinguisherMethodByNamespaceType,
			withSubjects(everything, users(bootstrappolicy.KubeControllerManager)...)),
		flowSchema("kube-scheduler", "workload-high", 800, flowcontrolv1.FlowDistinguisherMethodByNamespaceType,
			withSubjects(everything, users(bootstrappolicy.KubeScheduler)...)),
		flowSchema("kube-system-service-accounts", "workload-high", 900, flowcontrolv1.FlowDistinguisherMethodByNamespaceType,
			withSubjects(everything, kubeSystemServiceAccounts(flowcontrolv1.NameAll)...)),
		flowSchema("service-accounts", "workload-low", 9000, flowcontrolv1.FlowDistinguisherMethodByUserType,
			withSubjects(everything, groups(allServiceAccountsGroup)...)),
		flowSchema("global-default", "global-default", 9900, flowcontrolv1.FlowDistinguisherMethodByUserType,
			withSubjects(everything, groups(bootstrappolicy.UnauthenticatedGroup, bootstrappolicy.AuthenticatedGroup)...)),
		flowSchema(flowcontrolv1.FlowSchemaNameCatchAll, flowcontrolv1.PriorityLevelConfigurationNameCatchAll, 10000, flowcontrolv1.FlowDistinguisherMethodByUserType,
			withSubjects(everything, groups(bootstrappolicy.UnauthenticatedGroup, bootstrappolicy.AuthenticatedGroup)...)),
	}
}

// UID is the fixed UID of the default object of kind and name in the
// Controller's configuration until objects are read (and of a mandatory
// object digested in place of a missing one): a name-based (version 5
// style) UUID, the same in every server and run. The stored objects have
// the UIDs their creates gave them, as kube-apiserver's.
func UID(kind, name string) types.UID {
	sum := sha1.Sum([]byte("flowcontrol.apiserver.k8s.io/" + kind + "/" + name))
	sum[6] = sum[6]&0x0f | 0x50
	sum[8] = sum[8]&0x3f | 0x80
	return types.UID(fmt.Sprintf("%x-%x-%x-%x-%x", sum[0:4], sum[4:6], sum[6:8], sum[8:10], sum[10:16]))
}

func ptr(v int32) *int32 { return &v }

func priorityLevel(name string, spec flowcontrolv1.PriorityLevelConfigurationSpec) *flowcontrolv1.PriorityLevelConfiguration {
	return &flowcontrolv1.PriorityLevelConfiguration{
		TypeMeta: metav1.TypeMeta{APIVersion: flowcontrolv1.SchemeGroupVersion.String(), Kind: "PriorityLevelConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: UID("prioritylevelconfigurations", name),
			Annotations: map[string]string{flowcontrolv1.AutoUpdateAnnotationKey: "true"}},
		Spec: spec,
	}
}

// limitedLevel is a Limited level; q nil means the Reject limit response.
func limitedLevel(name string, shares, lendable int32, q *flowcontrolv1.QueuingConfiguration) *flowcontrolv1.PriorityLevelConfiguration {
	lr := flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject}
	if q != nil {
		lr = flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue, Queuing: q}
	}
	return priorityLevel(name, flowcontrolv1.PriorityLevelConfigurationSpec{
		Type: flowcontrolv1.PriorityLevelEnablementLimited,
		Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
			NominalConcurrencyShares: ptr(shares), LendablePercent: ptr(lendable), LimitResponse: lr,
		},
	})
}

func queuing(queues, handSize, queueLengthLimit int32) *flowcontrolv1.QueuingConfiguration {
	return &flowcontrolv1.QueuingConfiguration{Queues: queues, HandSize: handSize, QueueLengthLimit: queueLengthLimit}
}

func flowSchema(name, level string, precedence int32, dm flowcontrolv1.FlowDistinguisherMethodType, rules flowcontrolv1.PolicyRulesWithSubjects) *flowcontrolv1.FlowSchema {
	var method *flowcontrolv1.FlowDistinguisherMethod
	if dm != "" {
		method = &flowcontrolv1.FlowDistinguisherMethod{Type: dm}
	}
	return &flowcontrolv1.FlowSchema{
		TypeMeta: metav1.TypeMeta{APIVersion: flowcontrolv1.SchemeGroupVersion.String(), Kind: "FlowSchema"},
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: UID("flowschemas", name),
			Annotations: map[string]string{flowcontrolv1.AutoUpdateAnnotationKey: "true"}},
		Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: level},
			MatchingPrecedence:         precedence,
			DistinguisherMethod:        method,
			Rules:                      []flowcontrolv1.PolicyRulesWithSubjects{rules},
		},
	}
}

// everythingRules match every resource request (namespaced and cluster
// scoped) and every non-resource request.
func everythingRules() flowcontrolv1.PolicyRulesWithSubjects {
	return flowcontrolv1.PolicyRulesWithSubjects{
		ResourceRules: []flowcontrolv1.ResourcePolicyRule{
			resourceRule([]string{flowcontrolv1.VerbAll}, flowcontrolv1.APIGroupAll, []string{flowcontrolv1.ResourceAll}, flowcontrolv1.NamespaceEvery, true),
		},
		NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{
			{Verbs: []string{flowcontrolv1.VerbAll}, NonResourceURLs: []string{flowcontrolv1.NonResourceAll}},
		},
	}
}

func withSubjects(r flowcontrolv1.PolicyRulesWithSubjects, subjects ...flowcontrolv1.Subject) flowcontrolv1.PolicyRulesWithSubjects {
	r.Subjects = subjects
	return r
}

func resourceRule(verbs []string, group string, resources []string, namespace string, clusterScope bool) flowcontrolv1.ResourcePolicyRule {
	return flowcontrolv1.ResourcePolicyRule{Verbs: verbs, APIGroups: []string{group}, Resources: resources,
		Namespaces: []string{namespace}, ClusterScope: clusterScope}
}

func groups(names ...string) []flowcontrolv1.Subject {
	out := make([]flowcontrolv1.Subject, 0, len(names))
	for _, n := range names {
		out = append(out, flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindGroup, Group: &flowcontrolv1.GroupSubject{Name: n}})
	}
	return out
}

func users(names ...string) []flowcontrolv1.Subject {
	out := make([]flowcontrolv1.Subject, 0, len(names))
	for _, n := range names {
		out = append(out, flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: n}})
	}
	return out
}

func kubeSystemServiceAccounts(names ...string) []flowcontrolv1.Subject {
	out := make([]flowcontrolv1.Subject, 0, len(names))
	for _, n := range names {
		out = append(out, flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindServiceAccount,
			ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Namespace: kubeSystem, Name: n}})
	}
	return out
}

// MandatoryPriorityLevel returns kube-apiserver's mandatory
// PriorityLevelConfiguration of that name (exempt, catch-all), or nil:
// objects every server keeps in existence, with a fixed spec (the exempt
// level's nominalConcurrencyShares and lendablePercent excepted).
func MandatoryPriorityLevel(name string) *flowcontrolv1.PriorityLevelConfiguration {
	if name != flowcontrolv1.PriorityLevelConfigurationNameExempt && name != flowcontrolv1.PriorityLevelConfigurationNameCatchAll {
		return nil
	}
	for _, p := range DefaultPriorityLevels() {
		if p.Name == name {
			return p
		}
	}
	return nil
}

// MandatoryFlowSchema returns kube-apiserver's mandatory FlowSchema of
// that name (exempt, catch-all), or nil.
func MandatoryFlowSchema(name string) *flowcontrolv1.FlowSchema {
	if name != flowcontrolv1.FlowSchemaNameExempt && name != flowcontrolv1.FlowSchemaNameCatchAll {
		return nil
	}
	for _, fs := range DefaultFlowSchemas() {
		if fs.Name == name {
			return fs
		}
	}
	return nil
}
