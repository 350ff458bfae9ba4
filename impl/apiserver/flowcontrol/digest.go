package flowcontrol

import (
	"fmt"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
)

// Digested is a configuration as API Priority and Fairness uses it, made
// by Digest from the FlowSchemas and PriorityLevelConfigurations that
// exist.
type Digested struct {
	// FlowSchemas are the schemas requests are matched against: those
	// whose priority level exists, and the mandatory exempt and catch-all
	// schemas when they do not exist.
	FlowSchemas []*flowcontrolv1.FlowSchema
	// PriorityLevels are the usable levels, and the mandatory exempt and
	// catch-all levels when they do not exist.
	PriorityLevels []*flowcontrolv1.PriorityLevelConfiguration
	// Dangling tells for every FlowSchema given whether its priority
	// level is missing (its Dangling condition; such a schema is ignored).
	Dangling map[string]bool
	// Unusable says why levels were left out (never for objects that
	// passed the API's validation).
	Unusable []error
}

// Digest makes the configuration of the given objects, as kube-apiserver
// does: a FlowSchema naming a priority level that does not exist is
// dangling and ignored; a missing mandatory object (exempt, catch-all) is
// imagined, so that classification and the catch-all level always work,
// until the ensurer creates it again. It is a pure function.
func Digest(schemas []*flowcontrolv1.FlowSchema, levels []*flowcontrolv1.PriorityLevelConfiguration) Digested {
	dg := Digested{Dangling: make(map[string]bool, len(schemas))}
	have := map[string]bool{}
	for _, p := range levels {
		var err error
		switch {
		case have[p.Name]:
			err = fmt.Errorf("flowcontrol: priority level %q given twice", p.Name)
		case (p.Name == flowcontrolv1.PriorityLevelConfigurationNameExempt) != (p.Spec.Type == flowcontrolv1.PriorityLevelEnablementExempt):
			err = fmt.Errorf("flowcontrol: priority level %q: only the level named exempt is, and must be, Exempt", p.Name)
		default:
			err = CheckLevel(p)
		}
		if err != nil {
			dg.Unusable = append(dg.Unusable, err)
			continue
		}
		have[p.Name] = true
		dg.PriorityLevels = append(dg.PriorityLevels, p)
	}
	for _, name := range []string{flowcontrolv1.PriorityLevelConfigurationNameExempt, flowcontrolv1.PriorityLevelConfigurationNameCatchAll} {
		if !have[name] {
			have[name] = true
			dg.PriorityLevels = append(dg.PriorityLevels, MandatoryPriorityLevel(name))
		}
	}
	named := map[string]bool{}
	for _, fs := range schemas {
		missing := !have[fs.Spec.PriorityLevelConfiguration.Name]
		dg.Dangling[fs.Name] = missing
		if missing || named[fs.Name] {
			continue
		}
		named[fs.Name] = true
		dg.FlowSchemas = append(dg.FlowSchemas, fs)
	}
	for _, name := range []string{flowcontrolv1.FlowSchemaNameExempt, flowcontrolv1.FlowSchemaNameCatchAll} {
		if !named[name] {
			dg.FlowSchemas = append(dg.FlowSchemas, MandatoryFlowSchema(name))
		}
	}
	return dg
}
