package tlacheck

import "slices"

// Declarations is what a module declares at top level, as this checker reads
// it: spec's parse test compares it with what the TLA+ grammar
// (tree-sitter-tlaplus) finds in the same module.
type Declarations struct {
	Extends     []string
	Constants   []string       // in order of declaration
	Variables   []string       // in order of declaration
	Definitions map[string]int // every top-level operator definition, with its arity
}

// Declarations returns the module's top-level declarations.
func (m *Module) Declarations() Declarations {
	d := Declarations{
		Extends:     slices.Clone(m.extends),
		Constants:   slices.Clone(m.constants),
		Variables:   slices.Clone(m.variables),
		Definitions: make(map[string]int, len(m.defs)),
	}
	for name, def := range m.defs {
		d.Definitions[name] = len(def.params)
	}
	return d
}
