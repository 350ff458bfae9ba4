package flowcontrol

import (
	"cmp"
	"slices"
	"strings"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver/auth"
	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// sortSchemas orders FlowSchemas as they are tried: lowest
// matchingPrecedence first, ties by name.
func sortSchemas(fs []*flowcontrolv1.FlowSchema) {
	slices.SortStableFunc(fs, func(a, b *flowcontrolv1.FlowSchema) int {
		if c := cmp.Compare(a.Spec.MatchingPrecedence, b.Spec.MatchingPrecedence); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
}

// matchSchema returns the first of the sorted schemas matching the
// request of user u with attributes info, or nil.
func matchSchema(sorted []*flowcontrolv1.FlowSchema, u *request.User, info *request.Info) *flowcontrolv1.FlowSchema {
	for _, fs := range sorted {
		if schemaMatches(fs, u, info) {
			return fs
		}
	}
	return nil
}

// schemaMatches: one of the schema's rules matches the user and the request.
func schemaMatches(fs *flowcontrolv1.FlowSchema, u *request.User, info *request.Info) bool {
	for i := range fs.Spec.Rules {
		r := &fs.Spec.Rules[i]
		if !slices.ContainsFunc(r.Subjects, func(s flowcontrolv1.Subject) bool { return subjectMatches(s, u) }) {
			continue
		}
		if info.IsResourceRequest {
			if slices.ContainsFunc(r.ResourceRules, func(rr flowcontrolv1.ResourcePolicyRule) bool { return resourceRuleMatches(rr, info) }) {
				return true
			}
			continue
		}
		if slices.ContainsFunc(r.NonResourceRules, func(nr flowcontrolv1.NonResourcePolicyRule) bool { return nonResourceRuleMatches(nr, info) }) {
			return true
		}
	}
	return false
}

func subjectMatches(s flowcontrolv1.Subject, u *request.User) bool {
	switch s.Kind {
	case flowcontrolv1.SubjectKindUser:
		return s.User != nil && (s.User.Name == flowcontrolv1.NameAll || s.User.Name == u.Name)
	case flowcontrolv1.SubjectKindGroup:
		return s.Group != nil && (s.Group.Name == flowcontrolv1.NameAll || slices.Contains(u.Groups, s.Group.Name))
	case flowcontrolv1.SubjectKindServiceAccount:
		if s.ServiceAccount == nil {
			return false
		}
		// system:serviceaccount:<namespace>:<name>, matched piece by
		// piece (no string built per request).
		rest, ok := strings.CutPrefix(u.Name, auth.ServiceAccountUsernamePrefix)
		if ok {
			rest, ok = strings.CutPrefix(rest, s.ServiceAccount.Namespace)
		}
		if ok {
			rest, ok = strings.CutPrefix(rest, ":")
		}
		return ok && (s.ServiceAccount.Name == flowcontrolv1.NameAll || rest == s.ServiceAccount.Name)
	}
	return false
}

func resourceRuleMatches(r flowcontrolv1.ResourcePolicyRule, info *request.Info) bool {
	if !listHas(r.Verbs, info.Verb, flowcontrolv1.VerbAll) ||
		!resourceListHas(r.Resources, info.Resource, info.Subresource) ||
		!listHas(r.APIGroups, info.APIGroup, flowcontrolv1.APIGroupAll) {
		return false
	}
	if info.Namespace == "" {
		return r.ClusterScope
	}
	return listHas(r.Namespaces, info.Namespace, flowcontrolv1.NamespaceEvery)
}

// nonResourceRuleMatches compares paths as kube-apiserver does: "*" is
// every path; a rule path matches itself and every path below it ("/x" and
// "/x/*" both match "/x/y").
func nonResourceRuleMatches(r flowcontrolv1.NonResourcePolicyRule, info *request.Info) bool {
	if !listHas(r.Verbs, info.Verb, flowcontrolv1.VerbAll) {
		return false
	}
	for _, p := range r.NonResourceURLs {
		if p == flowcontrolv1.NonResourceAll || p == info.Path {
			return true
		}
		prefix := strings.TrimSuffix(p, "*")
		if !strings.HasSuffix(prefix, "/") {
			prefix += "/"
		}
		if strings.HasPrefix(info.Path, prefix) {
			return true
		}
	}
	return false
}

// listHas: x is in list, or list is just the wildcard (validation keeps a
// wildcard alone in its list).
func listHas(list []string, x, wildcard string) bool {
	if len(list) == 1 && list[0] == wildcard {
		return true
	}
	return slices.Contains(list, x)
}

// resourceListHas: list has resource, or resource/subresource when there
// is a subresource, or is just the wildcard.
func resourceListHas(list []string, resource, subresource string) bool {
	if len(list) == 1 && list[0] == flowcontrolv1.ResourceAll {
		return true
	}
	for _, x := range list {
		if subresource == "" {
			if x == resource {
				return true
			}
			continue
		}
		if len(x) == len(resource)+1+len(subresource) && strings.HasPrefix(x, resource) &&
			x[len(resource)] == '/' && strings.HasSuffix(x, subresource) {
			return true
		}
	}
	return false
}

// distinguisher is the part of the flow's identity a schema's
// distinguisher method takes from the request: the user name (ByUser),
// the namespace (ByNamespace; "" for cluster-scoped and non-resource
// requests), or nothing.
func distinguisher(fs *flowcontrolv1.FlowSchema, u *request.User, info *request.Info) string {
	if fs.Spec.DistinguisherMethod == nil {
		return ""
	}
	switch fs.Spec.DistinguisherMethod.Type {
	case flowcontrolv1.FlowDistinguisherMethodByUserType:
		return u.Name
	case flowcontrolv1.FlowDistinguisherMethodByNamespaceType:
		return info.Namespace
	}
	return ""
}
