package spec_test

import (
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/kubeproof/kubeproof/model"
	"github.com/kubeproof/kubeproof/spec"
)

// The module as the TLA+ grammar reads it declares exactly the Go model's
// variables, its Next is a choice among exactly the Go model's actions (the
// operators with parameters Next refers to), and it defines an operator for
// each of the model's properties.
func TestGrammarNamesMatchTheGoModel(t *testing.T) {
	tla := spec.GrammarDeclarations(t)
	cfg, err := model.LoadConfig("Small")
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.New(cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	s := m.Init()[0]
	var goVars []string
	for _, b := range m.Bindings(&s) {
		name, _, _ := strings.Cut(b.Name, "[")
		if !slices.Contains(goVars, name) {
			goVars = append(goVars, name)
		}
	}
	tlaVars := slices.Clone(tla.Variables)
	sort.Strings(goVars)
	sort.Strings(tlaVars)
	if !slices.Equal(goVars, tlaVars) {
		t.Errorf("VARIABLES of PodPipeline.tla:\n  %v\nvariables of the Go model:\n  %v", tlaVars, goVars)
	}
	var goActions, tlaActions []string
	for _, k := range model.Kinds() {
		goActions = append(goActions, k.String())
	}
	for _, name := range tla.Uses["Next"] {
		if arity, ok := tla.Definitions[name]; ok && arity > 0 {
			tlaActions = append(tlaActions, name)
		}
	}
	sort.Strings(goActions)
	sort.Strings(tlaActions)
	if !slices.Equal(goActions, tlaActions) {
		t.Errorf("actions in Next of PodPipeline.tla:\n  %v\nactions of the Go model:\n  %v", tlaActions, goActions)
	}
	for _, p := range model.Properties {
		if _, ok := tla.Definitions[model.OperatorFromID(p.ID)]; !ok {
			t.Errorf("property %s has no operator %s in PodPipeline.tla", p.ID, model.OperatorFromID(p.ID))
		}
	}
}
