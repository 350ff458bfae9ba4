package audit

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// LoadPolicy reads and validates a policy file (YAML or JSON).
func LoadPolicy(path string) (*Policy, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading audit policy: %w", err)
	}
	p, err := ParsePolicy(data)
	if err != nil {
		return nil, fmt.Errorf("audit policy %s: %w", path, err)
	}
	return p, nil
}

// ParsePolicy decodes and validates an audit.k8s.io/v1 Policy.
func ParsePolicy(data []byte) (*Policy, error) {
	p := &Policy{}
	if err := yaml.UnmarshalStrict(data, p); err != nil {
		return nil, fmt.Errorf("decoding: %w", err)
	}
	if p.APIVersion != APIVersion || p.Kind != PolicyKind {
		return nil, fmt.Errorf("apiVersion %q kind %q: want %s %s", p.APIVersion, p.Kind, APIVersion, PolicyKind)
	}
	if len(p.Rules) == 0 {
		return nil, fmt.Errorf("rules: Required value: at least one rule")
	}
	if err := validateStages("omitStages", p.OmitStages); err != nil {
		return nil, err
	}
	for i, r := range p.Rules {
		field := fmt.Sprintf("rules[%d]", i)
		if !r.Level.Valid() {
			return nil, fmt.Errorf("%s.level: Unsupported value: %q", field, r.Level)
		}
		if len(r.NonResourceURLs) > 0 && (len(r.Resources) > 0 || len(r.Namespaces) > 0) {
			return nil, fmt.Errorf("%s.nonResourceURLs: Invalid value: rules cannot apply to both regular resources and non-resource URLs", field)
		}
		for _, u := range r.NonResourceURLs {
			if u != "*" && !strings.HasPrefix(u, "/") {
				return nil, fmt.Errorf("%s.nonResourceURLs: Invalid value: %q: non-resource URL rules must begin with a '/' character", field, u)
			}
			if i := strings.Index(u, "*"); i >= 0 && i != len(u)-1 {
				return nil, fmt.Errorf("%s.nonResourceURLs: Invalid value: %q: non-resource URL wildcards ('*') must be the final character of the rule", field, u)
			}
		}
		for _, gr := range r.Resources {
			if len(gr.ResourceNames) > 0 && len(gr.Resources) == 0 {
				return nil, fmt.Errorf("%s.resources.resourceNames: Invalid value: using resourceNames requires at least one resource", field)
			}
		}
		if err := validateStages(field+".omitStages", r.OmitStages); err != nil {
			return nil, err
		}
	}
	return p, nil
}

func validateStages(field string, stages []Stage) error {
	for _, s := range stages {
		if !s.valid() {
			return fmt.Errorf("%s: Unsupported value: %q", field, s)
		}
	}
	return nil
}

// Decision is what the policy says about one request.
type Decision struct {
	Level      Level
	OmitStages []Stage
	// OmitManagedFields drops metadata.managedFields from the bodies.
	OmitManagedFields bool
}

// Evaluate returns the level of the first rule matching the request, with
// the stages to omit (the policy's and the rule's). user may be nil.
func (p *Policy) Evaluate(user *request.User, info *request.Info) Decision {
	if p == nil || info == nil {
		return Decision{Level: LevelNone}
	}
	for i := range p.Rules {
		r := &p.Rules[i]
		if !ruleMatches(r, user, info) {
			continue
		}
		omit := p.OmitManagedFields
		if r.OmitManagedFields != nil {
			omit = *r.OmitManagedFields
		}
		return Decision{Level: r.Level, OmitStages: append(append([]Stage(nil), p.OmitStages...), r.OmitStages...), OmitManagedFields: omit}
	}
	return Decision{Level: LevelNone, OmitStages: p.OmitStages}
}

func ruleMatches(r *PolicyRule, user *request.User, info *request.Info) bool {
	if len(r.Users) > 0 && (user == nil || !slices.Contains(r.Users, user.Name)) {
		return false
	}
	if len(r.UserGroups) > 0 {
		if user == nil || !slices.ContainsFunc(user.Groups, func(g string) bool { return slices.Contains(r.UserGroups, g) }) {
			return false
		}
	}
	if len(r.Verbs) > 0 && !slices.Contains(r.Verbs, info.Verb) {
		return false
	}
	if len(r.Namespaces) > 0 || len(r.Resources) > 0 {
		return resourceMatches(r, info)
	}
	if len(r.NonResourceURLs) > 0 {
		if info.IsResourceRequest {
			return false
		}
		for _, u := range r.NonResourceURLs {
			if u == "*" || u == info.Path || (strings.HasSuffix(u, "*") && strings.HasPrefix(info.Path, strings.TrimSuffix(u, "*"))) {
				return true
			}
		}
		return false
	}
	return true
}

func resourceMatches(r *PolicyRule, info *request.Info) bool {
	if !info.IsResourceRequest {
		return false
	}
	// "" in namespaces matches cluster-scoped requests.
	if len(r.Namespaces) > 0 && !slices.Contains(r.Namespaces, info.Namespace) {
		return false
	}
	if len(r.Resources) == 0 {
		return true
	}
	combined := info.Resource
	if info.Subresource != "" {
		combined += "/" + info.Subresource
	}
	for _, gr := range r.Resources {
		if gr.Group != info.APIGroup {
			continue
		}
		if len(gr.Resources) == 0 {
			return true
		}
		if len(gr.ResourceNames) > 0 && !slices.Contains(gr.ResourceNames, info.Name) {
			continue
		}
		for _, res := range gr.Resources {
			switch {
			case res == "*", res == combined:
				return true
			case info.Subresource != "" && strings.HasPrefix(res, "*/") && res[2:] == info.Subresource:
				return true
			case strings.HasSuffix(res, "/*") && strings.TrimSuffix(res, "/*") == info.Resource:
				return true
			}
		}
	}
	return false
}
