package tlacheck

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Problem is one finding, at a token of the module.
type Problem struct {
	Line int
	Msg  string
}

func (p Problem) String() string { return fmt.Sprintf("line %d: %s", p.Line, p.Msg) }

// decl is a declared name: a constant, a variable, an operator (with its
// arity) or a bound variable.
type decl struct {
	kind  string // "constant", "variable", "operator", "bound", "standard"
	arity int
}

// def is a top-level definition Name(params) == body.
type def struct {
	name   string
	params []string
	head   int // token index of the name
	body   [2]int
}

// Module is a lexed TLA+ module with its top-level declarations.
type Module struct {
	toks      []Token
	match     map[int]int // opening bracket index -> closing index and back
	depth     []int       // bracket depth of each token
	constants []string
	variables []string
	defs      map[string]*def
	order     []string // definitions in order
	global    map[string]decl
	extends   []string
	problems  []Problem
}

// standardModules are the operators of the standard modules, with arities.
var standardModules = map[string]map[string]int{
	"Naturals":   {"Nat": 0},
	"Integers":   {"Nat": 0, "Int": 0},
	"Sequences":  {"Seq": 1, "Len": 1, "Head": 1, "Tail": 1, "Append": 2, "SubSeq": 3, "SelectSeq": 2},
	"FiniteSets": {"IsFiniteSet": 1, "Cardinality": 1},
	"TLC": {"Print": 2, "PrintT": 1, "Assert": 2, "JavaTime": 0, "Permutations": 1, "SortSeq": 2,
		"ToString": 1, "TLCGet": 1, "TLCSet": 2, "RandomElement": 1, "Any": 0},
}

// keywords of TLA+ that may appear in expressions.
var keywords = map[string]bool{
	"IF": true, "THEN": true, "ELSE": true, "CASE": true, "OTHER": true, "LET": true, "IN": true,
	"CHOOSE": true, "EXCEPT": true, "UNCHANGED": true, "ENABLED": true, "SUBSET": true, "UNION": true,
	"DOMAIN": true, "TRUE": true, "FALSE": true, "BOOLEAN": true, "STRING": true,
}

// backslashOps are the \-operators the checker knows (a typo such as \In is reported).
var backslashOps = map[string]bool{
	"\\in": true, "\\notin": true, "\\A": true, "\\E": true, "\\X": true, "\\times": true, "\\cup": true,
	"\\cap": true, "\\union": true, "\\intersect": true, "\\subseteq": true, "\\subset": true,
	"\\supseteq": true, "\\supset": true, "\\div": true, "\\o": true, "\\circ": true, "\\lnot": true,
	"\\neg": true, "\\land": true, "\\lor": true, "\\equiv": true, "\\leq": true, "\\geq": true, "\\": true, "\\/": true,
}

// Check runs every check on the module source and returns the problems found.
func Check(src string) []Problem {
	m, err := Parse(src)
	if err != nil {
		return []Problem{{0, err.Error()}}
	}
	m.checkBalance()
	if len(m.problems) > 0 {
		return m.problems // the other checks need balanced brackets
	}
	m.checkNames()
	m.checkVars()
	m.checkActions()
	sort.SliceStable(m.problems, func(i, j int) bool { return m.problems[i].Line < m.problems[j].Line })
	return m.problems
}

func (m *Module) errorf(i int, format string, args ...any) {
	line := 0
	if i >= 0 && i < len(m.toks) {
		line = m.toks[i].Line
	}
	m.problems = append(m.problems, Problem{line, fmt.Sprintf(format, args...)})
}

func (m *Module) is(i int, text string) bool {
	return i >= 0 && i < len(m.toks) && m.toks[i].Text == text
}

// Parse lexes the module and splits it into declarations and definitions.
func Parse(src string) (*Module, error) {
	toks, err := Lex(src)
	if err != nil {
		return nil, err
	}
	m := &Module{toks: toks, match: map[int]int{}, defs: map[string]*def{}, global: map[string]decl{}}
	// Header: ---- MODULE Name ----
	i := 0
	if !(m.is(0, "----") && m.is(1, "MODULE") && len(toks) > 3 && m.is(3, "----")) {
		return nil, fmt.Errorf("module header ---- MODULE Name ---- not found")
	}
	i = 4
	m.computeDepth()
	for i < len(toks) {
		t := toks[i]
		if !(t.LineStart && t.Col == 0) {
			m.errorf(i, "%q: expected a declaration or definition starting in column 0", t.Text)
			i = m.nextUnit(i + 1)
			continue
		}
		switch t.Text {
		case "----":
			i++
		case "====":
			i = len(toks)
		case "EXTENDS":
			end := m.nextUnit(i + 1)
			for j := i + 1; j < end; j++ {
				if toks[j].Kind == Ident {
					if _, ok := standardModules[toks[j].Text]; !ok {
						m.errorf(j, "EXTENDS %s: not a standard module the checker knows", toks[j].Text)
					}
					m.extends = append(m.extends, toks[j].Text)
				}
			}
			i = end
		case "CONSTANT", "CONSTANTS", "VARIABLE", "VARIABLES":
			end := m.nextUnit(i + 1)
			kind := "constant"
			if strings.HasPrefix(t.Text, "VARIABLE") {
				kind = "variable"
			}
			expectName := true
			for j := i + 1; j < end; j++ {
				switch {
				case expectName && toks[j].Kind == Ident:
					m.declare(j, toks[j].Text, decl{kind: kind})
					if kind == "constant" {
						m.constants = append(m.constants, toks[j].Text)
					} else {
						m.variables = append(m.variables, toks[j].Text)
					}
					expectName = false
				case !expectName && m.is(j, ","):
					expectName = true
				default:
					m.errorf(j, "unexpected %q in %s", toks[j].Text, t.Text)
				}
			}
			i = end
		case "RECURSIVE":
			// RECURSIVE Name(_, _): the arity is declared ahead of the definition.
			if i+1 < len(toks) && toks[i+1].Kind == Ident {
				n := 0
				if m.is(i+2, "(") {
					n = m.countArgs(i + 2)
				}
				m.declare(i+1, toks[i+1].Text, decl{kind: "operator", arity: n})
			}
			i = m.nextUnit(i + 1)
		default:
			if t.Kind != Ident {
				m.errorf(i, "%q at the start of a line: expected a definition", t.Text)
				i = m.nextUnit(i + 1)
				continue
			}
			d := &def{name: t.Text, head: i}
			j := i + 1
			if m.is(j, "(") {
				close := m.match[j]
				for k := j + 1; k < close; k++ {
					if toks[k].Kind == Ident {
						d.params = append(d.params, toks[k].Text)
					} else if !m.is(k, ",") {
						m.errorf(k, "%s: unexpected %q among parameters", d.name, toks[k].Text)
					}
				}
				j = close + 1
			}
			if !m.is(j, "==") {
				m.errorf(j, "%s: expected ==", d.name)
				i = m.nextUnit(j)
				continue
			}
			end := m.nextUnit(j + 1)
			d.body = [2]int{j + 1, end}
			if prev, ok := m.global[d.name]; ok && !(prev.kind == "operator" && m.defs[d.name] == nil) {
				m.errorf(i, "%s defined twice", d.name)
			}
			m.global[d.name] = decl{kind: "operator", arity: len(d.params)}
			m.defs[d.name] = d
			m.order = append(m.order, d.name)
			i = end
		}
	}
	return m, nil
}

func (m *Module) declare(i int, name string, d decl) {
	if _, ok := m.global[name]; ok {
		m.errorf(i, "%s declared twice", name)
	}
	m.global[name] = d
}

// nextUnit is the index of the next token that starts a line in column 0.
func (m *Module) nextUnit(i int) int {
	for i < len(m.toks) && !(m.toks[i].LineStart && m.toks[i].Col == 0) {
		i++
	}
	return i
}

var closers = map[string]string{"(": ")", "[": "]", "{": "}", "<<": ">>"}

// computeDepth matches brackets and records each token's depth; a
// mismatch is reported by checkBalance.
func (m *Module) computeDepth() {
	m.depth = make([]int, len(m.toks))
	var stack []int
	for i, t := range m.toks {
		m.depth[i] = len(stack)
		if t.Kind != Op {
			continue
		}
		if _, open := closers[t.Text]; open {
			stack = append(stack, i)
			continue
		}
		switch t.Text {
		case ")", "]", "}", ">>":
			if len(stack) > 0 && closers[m.toks[stack[len(stack)-1]].Text] == t.Text {
				o := stack[len(stack)-1]
				m.match[o], m.match[i] = i, o
				stack = stack[:len(stack)-1]
				m.depth[i] = len(stack)
			}
		}
	}
}

// countArgs counts the top-level arguments of the parenthesised list at open.
func (m *Module) countArgs(open int) int {
	close, ok := m.match[open]
	if !ok || close == open+1 {
		return 0
	}
	n := 1
	for k := open + 1; k < close; k++ {
		if m.depth[k] == m.depth[open]+1 && m.is(k, ",") {
			n++
		}
	}
	return n
}

// checkBalance: brackets match within each unit; IF has THEN and ELSE,
// LET has IN, CASE has an arm, at the same bracket depth.
func (m *Module) checkBalance() {
	type open struct {
		idx   int
		depth int
		want  string
	}
	var brackets []int
	var kw []open
	flush := func() {
		for _, b := range brackets {
			m.errorf(b, "%q is never closed", m.toks[b].Text)
		}
		for _, k := range kw {
			m.errorf(k.idx, "%s without %s", m.toks[k.idx].Text, k.want)
		}
		brackets, kw = nil, nil
	}
	depth := 0
	for i, t := range m.toks {
		if t.LineStart && t.Col == 0 {
			flush()
			depth = 0
		}
		if t.Kind == Op {
			if _, isOpen := closers[t.Text]; isOpen {
				brackets = append(brackets, i)
				depth++
				continue
			}
			switch t.Text {
			case ")", "]", "}", ">>":
				if len(brackets) == 0 || closers[m.toks[brackets[len(brackets)-1]].Text] != t.Text {
					m.errorf(i, "%q does not close an open bracket", t.Text)
					continue
				}
				brackets = brackets[:len(brackets)-1]
				depth--
				for len(kw) > 0 && kw[len(kw)-1].depth > depth {
					k := kw[len(kw)-1]
					m.errorf(k.idx, "%s without %s before %q", m.toks[k.idx].Text, k.want, t.Text)
					kw = kw[:len(kw)-1]
				}
				continue
			}
			if strings.HasPrefix(t.Text, "\\") && !backslashOps[t.Text] {
				m.errorf(i, "unknown operator %s", t.Text)
			}
			if t.Text == "->" && len(kw) > 0 && kw[len(kw)-1].want == "->" && kw[len(kw)-1].depth == depth {
				kw = kw[:len(kw)-1]
			}
			continue
		}
		if t.Kind != Ident {
			continue
		}
		top := func(want string) bool {
			return len(kw) > 0 && kw[len(kw)-1].want == want && kw[len(kw)-1].depth == depth
		}
		switch t.Text {
		case "IF":
			kw = append(kw, open{i, depth, "THEN"})
		case "THEN":
			if !top("THEN") {
				m.errorf(i, "THEN without IF")
				continue
			}
			kw[len(kw)-1].want = "ELSE"
		case "ELSE":
			if !top("ELSE") {
				m.errorf(i, "ELSE without IF ... THEN")
				continue
			}
			kw = kw[:len(kw)-1]
		case "LET":
			kw = append(kw, open{i, depth, "IN"})
		case "IN":
			if !top("IN") {
				m.errorf(i, "IN without LET")
				continue
			}
			kw = kw[:len(kw)-1]
		case "CASE":
			kw = append(kw, open{i, depth, "->"})
		}
	}
	flush()
}

// ---- names and arities ----

// binding is a name bound over the token interval [from, to).
type binding struct {
	name     string
	from, to int
	arity    int
}

// checkNames resolves every identifier of every definition body and checks
// operator arities.
func (m *Module) checkNames() {
	std := map[string]int{}
	for _, e := range m.extends {
		for k, v := range standardModules[e] {
			std[k] = v
		}
	}
	defined := map[string]bool{} // definitions seen so far (TLA+ defines before use)
	for _, c := range m.constants {
		defined[c] = true
	}
	for _, v := range m.variables {
		defined[v] = true
	}
	for name, d := range m.global {
		if d.kind == "operator" && m.defs[name] == nil {
			defined[name] = true // RECURSIVE declaration without a definition yet
		}
	}
	for _, name := range m.order {
		d := m.defs[name]
		if slices.Contains(m.variables, name) || slices.Contains(m.constants, name) {
			m.errorf(d.head, "%s is both declared and defined", name)
		}
		defined[name] = true // a definition may refer to itself only if RECURSIVE; checked below
		binds := m.bindings(d)
		for _, p := range d.params {
			binds = append(binds, binding{name: p, from: d.body[0], to: d.body[1]})
		}
		skip := m.fieldNames(d.body[0], d.body[1])
		for i := d.body[0]; i < d.body[1]; i++ {
			t := m.toks[i]
			if t.Kind != Ident || skip[i] || keywords[t.Text] {
				continue
			}
			name := t.Text
			if strings.HasPrefix(name, "WF_") || strings.HasPrefix(name, "SF_") {
				name = name[3:] // WF_vars(A): the subscript must resolve; one argument
				if !m.is(i+1, "(") || m.countArgs(i+1) != 1 {
					m.errorf(i, "%s needs one action argument", t.Text)
				}
			} else if strings.HasPrefix(name, "_") && m.is(i-1, "]") {
				name = name[1:] // [][Next]_vars, [A]_vars
			}
			arity, ok := -1, false
			for k := len(binds) - 1; k >= 0; k-- {
				if b := binds[k]; b.name == name && b.from <= i && i < b.to {
					arity, ok = b.arity, true
					break
				}
			}
			if !ok {
				if g, found := m.global[name]; found && defined[name] {
					arity, ok = g.arity, true
					if name == d.name && !m.recursive(name) {
						m.errorf(i, "%s refers to itself but is not declared RECURSIVE", name)
					}
				} else if a, found := std[name]; found {
					arity, ok = a, true
				}
			}
			if !ok {
				if _, found := m.global[name]; found {
					m.errorf(i, "%s used in %s before it is defined", name, d.name)
				} else {
					m.errorf(i, "%s: undeclared identifier (in %s)", name, d.name)
				}
				continue
			}
			if name != t.Text {
				continue // subscripts
			}
			switch {
			case arity > 0 && !m.is(i+1, "("):
				m.errorf(i, "%s takes %d argument(s), used without them (in %s)", name, arity, d.name)
			case arity > 0 && m.countArgs(i+1) != arity:
				m.errorf(i, "%s takes %d argument(s), given %d (in %s)", name, arity, m.countArgs(i+1), d.name)
			case arity == 0 && m.is(i+1, "(") && !m.isHead(i):
				m.errorf(i, "%s takes no arguments, given %d (in %s)", name, m.countArgs(i+1), d.name)
			}
		}
	}
}

func (m *Module) recursive(name string) bool {
	for i := 0; i+1 < len(m.toks); i++ {
		if m.toks[i].Text == "RECURSIVE" && m.toks[i+1].Text == name {
			return true
		}
	}
	return false
}

// isHead reports whether ident i is the name of a LET definition with parameters.
func (m *Module) isHead(i int) bool {
	if close, ok := m.match[i+1]; ok {
		return m.is(close+1, "==")
	}
	return false
}

// fieldNames marks record field names in [a, b): after "." (e.dot) and
// before "|->" or ":" in a record constructor or record set.
func (m *Module) fieldNames(a, b int) map[int]bool {
	skip := map[int]bool{}
	for i := a; i < b; i++ {
		t := m.toks[i]
		if t.Kind != Ident {
			continue
		}
		if m.is(i-1, ".") {
			skip[i] = true
		}
		if m.is(i+1, "|->") && (m.is(i-1, "[") || m.is(i-1, ",")) {
			skip[i] = true
		}
		if m.is(i+1, ":") && (m.is(i-1, "[") || m.is(i-1, ",")) {
			skip[i] = true // record set [a : S, b : T]
		}
	}
	return skip
}

// scopeEnd is where a quantifier's scope that starts at i ends: at the
// bracket closing its group, at the next line starting at or left of the
// column its line starts at (the next item of an enclosing bullet list),
// or at the unit's end.
func (m *Module) scopeEnd(i, unitEnd int) int {
	lineCol := m.toks[i].Col
	for k := i; k >= 0; k-- {
		if m.toks[k].LineStart {
			lineCol = m.toks[k].Col
			break
		}
	}
	for k := i + 1; k < unitEnd; k++ {
		if m.depth[k] < m.depth[i] {
			return k
		}
		if m.toks[k].LineStart && m.depth[k] == m.depth[i] && m.toks[k].Col <= lineCol {
			return k
		}
	}
	return unitEnd
}

// groupEnd is the bracket closing the group that contains i, or unitEnd.
func (m *Module) groupEnd(i, unitEnd int) int {
	for k := i + 1; k < unitEnd; k++ {
		if m.depth[k] < m.depth[i] {
			return k
		}
	}
	return unitEnd
}

// binderNames reads a binder list (x, y \in S, <<a, b>> \in T, z) in [a, b)
// and returns the bound names with their token indices.
func (m *Module) binderNames(a, b int) []int {
	var names []int
	expectName := true
	base := m.depth[a]
	for k := a; k < b; k++ {
		t := m.toks[k]
		switch {
		case expectName && t.Kind == Ident:
			names = append(names, k)
			expectName = false
		case expectName && t.Text == "<<":
			close := m.match[k]
			for j := k + 1; j < close; j++ {
				if m.toks[j].Kind == Ident {
					names = append(names, j)
				}
			}
			k = close
			expectName = false
		case t.Text == "\\in" && m.depth[k] == base:
			// skip the set expression up to the next top-level comma
			for k+1 < b && !(m.is(k+1, ",") && m.depth[k+1] == base) {
				k++
			}
		case t.Text == "," && m.depth[k] == base:
			expectName = true
		}
	}
	return names
}

// topLevel finds the first token with text in [a, b) at the depth of a.
func (m *Module) topLevel(a, b int, text string) int {
	for k := a; k < b; k++ {
		if m.depth[k] == m.depth[a] && m.toks[k].Text == text {
			return k
		}
	}
	return -1
}

// bindings collects every bound name of definition d with its scope:
// quantifiers and CHOOSE, set builders and maps, function constructors,
// LET definitions and their parameters.
func (m *Module) bindings(d *def) []binding {
	a, b := d.body[0], d.body[1]
	var out []binding
	for i := a; i < b; i++ {
		t := m.toks[i]
		switch {
		case t.Text == "\\A" || t.Text == "\\E" || t.Text == "CHOOSE":
			colon := m.topLevel(i+1, b, ":")
			if colon < 0 {
				m.errorf(i, "%s without ':'", t.Text)
				continue
			}
			end := m.scopeEnd(i, b)
			for _, n := range m.binderNames(i+1, colon) {
				out = append(out, binding{name: m.toks[n].Text, from: n, to: end})
			}
		case t.Text == "{":
			close := m.match[i]
			colon := m.topLevel(i+1, close, ":")
			if colon < 0 || i+1 >= close {
				continue
			}
			var names []int
			if m.is(i+2, "\\in") || m.is(i+1, "<<") && m.is(m.match[i+1]+1, "\\in") {
				names = m.binderNames(i+1, colon) // {x \in S : P}
			} else {
				names = m.binderNames(colon+1, close) // {e : x \in S}
			}
			for _, n := range names {
				out = append(out, binding{name: m.toks[n].Text, from: i, to: close})
			}
		case t.Text == "[":
			close := m.match[i]
			if !(m.toks[i+1].Kind == Ident && m.is(i+2, "\\in") || m.is(i+1, "<<")) {
				continue
			}
			arrow := m.topLevel(i+1, close, "|->")
			if arrow < 0 {
				continue
			}
			for _, n := range m.binderNames(i+1, arrow) {
				out = append(out, binding{name: m.toks[n].Text, from: n, to: close})
			}
		case t.Text == "LET":
			in := m.matchingIn(i, b)
			if in < 0 {
				continue
			}
			end := m.groupEnd(i, b)
			// definition heads at the LET's depth: Name == or Name(params) ==
			var heads []int
			for k := i + 1; k < in; k++ {
				if m.toks[k].Text == "LET" { // a nested LET's definitions are its own
					if nested := m.matchingIn(k, in); nested > 0 {
						k = nested
					}
					continue
				}
				if m.depth[k] != m.depth[i] || m.toks[k].Kind != Ident {
					continue
				}
				if m.is(k+1, "==") || m.is(k+1, "(") && m.is(m.match[k+1]+1, "==") {
					heads = append(heads, k)
				}
			}
			for h, k := range heads {
				bodyEnd := in
				if h+1 < len(heads) {
					bodyEnd = heads[h+1]
				}
				arity := 0
				if m.is(k+1, "(") {
					close := m.match[k+1]
					arity = m.countArgs(k + 1)
					for j := k + 2; j < close; j++ {
						if m.toks[j].Kind == Ident {
							out = append(out, binding{name: m.toks[j].Text, from: k + 1, to: bodyEnd})
						}
					}
				}
				out = append(out, binding{name: m.toks[k].Text, from: bodyEnd, to: end, arity: arity})
				out = append(out, binding{name: m.toks[k].Text, from: k, to: k + 1, arity: arity}) // the head itself
			}
		}
	}
	return out
}

// matchingIn is the IN of the LET at i.
func (m *Module) matchingIn(i, b int) int {
	n := 0
	for k := i; k < b; k++ {
		switch m.toks[k].Text {
		case "LET":
			n++
		case "IN":
			n--
			if n == 0 {
				return k
			}
		}
	}
	return -1
}

// ---- variables: vars, Init, actions ----

// tupleNames expands a tuple of variables and tuple definitions (vars ==
// <<storeVars, runtimeVars, ...>>) to variable names.
func (m *Module) tupleNames(a, b int, seen map[string]bool) []string {
	var out []string
	for k := a; k < b; k++ {
		t := m.toks[k]
		if t.Kind != Ident {
			continue
		}
		if slices.Contains(m.variables, t.Text) {
			out = append(out, t.Text)
			continue
		}
		d := m.defs[t.Text]
		if d == nil || len(d.params) > 0 || seen[t.Text] {
			m.errorf(k, "%s in a variable tuple is not a variable or a tuple of variables", t.Text)
			continue
		}
		seen[t.Text] = true
		out = append(out, m.tupleNames(d.body[0], d.body[1], seen)...)
	}
	return out
}

// checkVars: every variable is in vars, and vars holds only variables.
func (m *Module) checkVars() {
	d := m.defs["vars"]
	if d == nil {
		m.errorf(0, "no definition of vars")
		return
	}
	in := m.tupleNames(d.body[0], d.body[1], map[string]bool{})
	for _, v := range m.variables {
		if !slices.Contains(in, v) {
			m.errorf(d.head, "variable %s is not in vars", v)
		}
	}
	for _, v := range in {
		if n := countOf(in, v); n > 1 {
			m.errorf(d.head, "variable %s appears %d times in vars", v, n)
			break
		}
	}
}

func countOf(xs []string, x string) int {
	n := 0
	for _, y := range xs {
		if y == x {
			n++
		}
	}
	return n
}

// cover is, for each variable, how many conjuncts on every path through
// an expression assign it (v' = e, v' \in S) or leave it UNCHANGED; in
// Init mode, v = e or v \in S.
type cover map[string]int

func (c cover) add(o cover) {
	for k, v := range o {
		c[k] += v
	}
}

// meet is what every branch covers (the most any branch constrains it).
func meet(branches []cover) cover {
	out := cover{}
	if len(branches) == 0 {
		return out
	}
	for k, v := range branches[0] {
		all := true
		for _, b := range branches[1:] {
			if b[k] == 0 {
				all = false
				break
			}
			v = max(v, b[k])
		}
		if all {
			out[k] = v
		}
	}
	return out
}

type coverer struct {
	m     *Module
	init  bool
	memo  map[string]cover
	stack map[string]bool
}

// checkActions: Init gives every variable a value; every action that Next
// is made of assigns or leaves unchanged every variable, exactly once on
// every path.
func (m *Module) checkActions() {
	next := m.defs["Next"]
	if next == nil {
		m.errorf(0, "no definition of Next")
		return
	}
	if init := m.defs["Init"]; init != nil {
		c := (&coverer{m: m, init: true, memo: map[string]cover{}, stack: map[string]bool{}}).expr(init.body[0], init.body[1])
		m.report("Init", init.head, c, "initialised")
	}
	cv := &coverer{m: m, memo: map[string]cover{}, stack: map[string]bool{}}
	seen := map[string]bool{}
	for i := next.body[0]; i < next.body[1]; i++ {
		name := m.toks[i].Text
		d := m.defs[name]
		if d == nil || seen[name] || m.toks[i].Kind != Ident {
			continue
		}
		seen[name] = true
		c := cv.def(name)
		if len(c) == 0 {
			continue // a set or a value, not an action
		}
		m.report(name, d.head, c, "assigned or UNCHANGED")
	}
}

func (m *Module) report(name string, at int, c cover, what string) {
	for _, v := range m.variables {
		switch n := c[v]; {
		case n == 0:
			m.errorf(at, "%s: variable %s not %s on every path", name, v, what)
		case n > 1:
			m.errorf(at, "%s: variable %s constrained %d times on one path", name, v, n)
		}
	}
}

func (cv *coverer) def(name string) cover {
	if c, ok := cv.memo[name]; ok {
		return c
	}
	d := cv.m.defs[name]
	if d == nil || cv.stack[name] {
		return cover{}
	}
	cv.stack[name] = true
	c := cv.expr(d.body[0], d.body[1])
	delete(cv.stack, name)
	cv.memo[name] = c
	return c
}

func isJunction(t string) bool { return t == "/\\" || t == "\\/" }

// expr covers the expression [a, b).
func (cv *coverer) expr(a, b int) cover {
	m := cv.m
	if a >= b {
		return cover{}
	}
	t := m.toks[a]
	// A bullet list: items at the bullet's column and depth.
	if isJunction(t.Text) {
		var items [][2]int
		start := a + 1
		for k := a + 1; k < b; k++ {
			if m.toks[k].Text == t.Text && m.toks[k].LineStart && m.toks[k].Col == t.Col && m.depth[k] == m.depth[a] {
				items = append(items, [2]int{start, k})
				start = k + 1
			}
		}
		items = append(items, [2]int{start, b})
		var covers []cover
		for _, it := range items {
			covers = append(covers, cv.expr(it[0], it[1]))
		}
		return combine(t.Text, covers)
	}
	switch t.Text {
	case "IF":
		then := cv.kwAt(a, b, "THEN", "IF")
		els := cv.kwAt(a, b, "ELSE", "IF")
		if then < 0 || els < 0 {
			return cover{}
		}
		c := cv.expr(a+1, then)
		c.add(meet([]cover{cv.expr(then+1, els), cv.expr(els+1, b)}))
		return c
	case "LET":
		in := m.matchingIn(a, b)
		if in < 0 {
			return cover{}
		}
		return cv.expr(in+1, b)
	case "\\E", "\\A", "CHOOSE":
		colon := m.topLevel(a+1, b, ":")
		if colon < 0 {
			return cover{}
		}
		return cv.expr(colon+1, b)
	}
	// Infix junctions at this level (IF, LET and quantifiers extend to the end).
	var split []int
	op := ""
	for k := a; k < b; k++ {
		if m.depth[k] != m.depth[a] {
			continue
		}
		tx := m.toks[k].Text
		if tx == "IF" || tx == "LET" || tx == "\\E" || tx == "\\A" || tx == "CHOOSE" {
			break
		}
		if isJunction(tx) {
			if op != "" && tx != op {
				m.errorf(k, "/\\ and \\/ mixed without parentheses or bullets (precedence conflict)")
			}
			op = tx
			split = append(split, k)
		}
	}
	if len(split) > 0 {
		var covers []cover
		start := a
		for _, k := range split {
			covers = append(covers, cv.expr(start, k))
			start = k + 1
		}
		covers = append(covers, cv.expr(start, b))
		return combine(op, covers)
	}
	return cv.atom(a, b)
}

func combine(op string, covers []cover) cover {
	if op == "\\/" {
		return meet(covers)
	}
	c := cover{}
	for _, x := range covers {
		c.add(x)
	}
	return c
}

// kwAt finds the keyword kw belonging to the opener at a (nesting by opener).
func (cv *coverer) kwAt(a, b int, kw, opener string) int {
	m := cv.m
	n := 0
	for k := a; k < b; k++ {
		if m.depth[k] != m.depth[a] {
			continue
		}
		switch m.toks[k].Text {
		case opener:
			n++
		case kw:
			if n == 1 {
				return k
			}
			if kw == "ELSE" {
				n--
			}
		case "ELSE":
			n--
		}
	}
	return -1
}

// atom covers one conjunct without top-level junctions.
func (cv *coverer) atom(a, b int) cover {
	m := cv.m
	t := m.toks[a]
	c := cover{}
	switch {
	case t.Text == "UNCHANGED":
		for _, v := range m.tupleNames(a+1, b, map[string]bool{}) {
			c[v]++
		}
		return c
	case t.Text == "(" && m.match[a] == b-1:
		return cv.expr(a+1, b-1)
	case t.Kind == Ident && slices.Contains(m.variables, t.Text):
		if cv.init && (m.is(a+1, "=") || m.is(a+1, "\\in")) ||
			!cv.init && m.is(a+1, "'") && (m.is(a+2, "=") || m.is(a+2, "\\in")) {
			c[t.Text]++
		}
		return c
	case t.Kind == Ident && m.defs[t.Text] != nil && (b == a+1 || m.is(a+1, "(") && m.match[a+1] == b-1):
		return maps(cv.def(t.Text))
	}
	return c
}

func maps(c cover) cover {
	out := cover{}
	out.add(c)
	return out
}
