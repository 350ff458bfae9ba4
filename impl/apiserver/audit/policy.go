package audit

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	fieldpath "k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// LoadPolicy reads and validates a policy file (YAML or JSON). Its
// errors are kube-apiserver's policy reader's: "failed to read file path
// …", or the policy's error followed by ": from file <path>".
func LoadPolicy(path string) (*Policy, error) {
	p, _, err := loadPolicy(path)
	return p, err
}

// loadPolicy is LoadPolicy, also returning the strict decoding's error of
// a policy decoded leniently (see parsePolicy).
func loadPolicy(path string) (_ *Policy, lenient, _ error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("failed to read file path %q: %w", path, err)
	}
	p, lenient, err := parsePolicy(data)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: from file %s", err, path)
	}
	return p, lenient, nil
}

// ParsePolicy decodes and validates an audit.k8s.io/v1 Policy. A policy
// with fields the Policy type lacks (or a key twice) is decoded
// leniently, as kube-apiserver's policy reader; Configure logs that.
func ParsePolicy(data []byte) (*Policy, error) {
	p, _, err := parsePolicy(data)
	return p, err
}

// parsePolicy is ParsePolicy; lenient is the strict decoding's error when
// the policy was decoded leniently after it, nil otherwise.
func parsePolicy(data []byte) (_ *Policy, lenient error, _ error) {
	p := &Policy{}
	if err := yaml.UnmarshalStrict(data, p); err != nil {
		// Strictness alone failed when the lenient decoding succeeds.
		p = &Policy{}
		if yaml.Unmarshal(data, p) != nil {
			return nil, nil, fmt.Errorf("failed decoding: %w", err)
		}
		lenient = err
	}
	if p.APIVersion != APIVersion || p.Kind != PolicyKind {
		return nil, nil, fmt.Errorf("apiVersion %q kind %q: want %s %s", p.APIVersion, p.Kind, APIVersion, PolicyKind)
	}
	if err := validatePolicy(p).ToAggregate(); err != nil {
		return nil, nil, err
	}
	if len(p.Rules) == 0 {
		return nil, nil, errors.New("loaded illegal policy with 0 rules")
	}
	return p, lenient, nil
}

// validatePolicy returns every error kube-apiserver's policy validation
// finds, in its order and words: the policy's omitStages, then each
// rule's (validateRule).
func validatePolicy(p *Policy) fieldpath.ErrorList {
	errs := validateStages(fieldpath.NewPath("omitStages"), p.OmitStages)
	for i := range p.Rules {
		errs = append(errs, validateRule(&p.Rules[i], fieldpath.NewPath("rules").Index(i))...)
	}
	return errs
}

// validLevels and validStages are the values a rule's level and an
// omitStages entry may take, in kube-apiserver's order.
var (
	validLevels = []string{string(LevelNone), string(LevelMetadata), string(LevelRequest), string(LevelRequestResponse)}
	validStages = []string{string(StageRequestReceived), string(StageResponseStarted), string(StageResponseComplete), string(StagePanic)}
)

// validateRule checks one rule: its level (required, one of
// validLevels), each non-resource URL (begins with '/' unless "*", a '*'
// only last), each resources entry (a group is a DNS subdomain; names need
// resources), each omitted stage, then non-resource URLs together with
// resources or namespaces.
func validateRule(r *PolicyRule, path *fieldpath.Path) fieldpath.ErrorList {
	var errs fieldpath.ErrorList
	switch level := path.Child("level"); {
	case r.Level == "":
		errs = append(errs, fieldpath.Required(level, ""))
	case !r.Level.Valid():
		errs = append(errs, fieldpath.NotSupported(level, r.Level, validLevels))
	}
	for i, u := range r.NonResourceURLs {
		if u == "*" {
			continue
		}
		if !strings.HasPrefix(u, "/") {
			errs = append(errs, fieldpath.Invalid(path.Child("nonResourceURLs").Index(i), u, "non-resource URL rules must begin with a '/' character"))
		}
		if star := strings.IndexByte(u, '*'); star >= 0 && star < len(u)-1 {
			errs = append(errs, fieldpath.Invalid(path.Child("nonResourceURLs").Index(i), u, "non-resource URL wildcards '*' must be the final character of the rule"))
		}
	}
	for _, gr := range r.Resources {
		if gr.Group != "" {
			if msgs := apivalidation.NameIsDNSSubdomain(gr.Group, false); len(msgs) > 0 {
				errs = append(errs, fieldpath.Invalid(path.Child("resources", "group"), gr.Group, strings.Join(msgs, ",")))
			}
		}
		if len(gr.ResourceNames) > 0 && len(gr.Resources) == 0 {
			errs = append(errs, fieldpath.Invalid(path.Child("resources", "resourceNames"), gr.ResourceNames, "using resourceNames requires at least one resource"))
		}
	}
	errs = append(errs, validateStages(path.Child("omitStages"), r.OmitStages)...)
	if len(r.NonResourceURLs) > 0 && (len(r.Resources) > 0 || len(r.Namespaces) > 0) {
		errs = append(errs, fieldpath.Invalid(path.Child("nonResourceURLs"), r.NonResourceURLs, "rules cannot apply to both regular resources and non-resource URLs"))
	}
	return errs
}

// validateStages checks each omitted stage is one of validStages.
func validateStages(path *fieldpath.Path, stages []Stage) fieldpath.ErrorList {
	var errs fieldpath.ErrorList
	for i, s := range stages {
		if !s.valid() {
			errs = append(errs, fieldpath.Invalid(path.Index(i), string(s), "allowed stages are "+strings.Join(validStages, ",")))
		}
	}
	return errs
}

// Decision is what the policy says about one request.
type Decision struct {
	Level      Level
	OmitStages []Stage
	// OmitManagedFields drops managedFields from the request and response
	// objects (not from a patch, recorded as sent).
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
