package spec

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubeproof/kubeproof/spec/tlacheck"
)

// The syntax of spec/*.tla is checked with the TLA+ project's own grammar,
// tree-sitter-tlaplus, by tsparse/check.mjs under Node (SANY and TLC cannot be
// installed on the project's machines; npm is reachable there and on CI). These
// tests install it with npm ci when tsparse/node_modules is missing and fail —
// never skip — when node or npm are missing or the install fails.

const parseScript = "tsparse/check.mjs"

var grammar struct {
	once sync.Once
	err  error
}

// installGrammar makes sure tsparse/node_modules holds the pinned packages.
func installGrammar(t *testing.T) {
	t.Helper()
	grammar.once.Do(func() { grammar.err = npmCI() })
	if grammar.err != nil {
		t.Fatalf("installing the TLA+ grammar for the syntax check: %v", grammar.err)
	}
}

func npmCI() error {
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s is needed to parse spec/*.tla with tree-sitter-tlaplus: %w", tool, err)
		}
	}
	installed := true
	for _, f := range []string{
		"tsparse/node_modules/web-tree-sitter/package.json",
		"tsparse/node_modules/@tlaplus/tree-sitter-tlaplus/tree-sitter-tlaplus.wasm",
	} {
		if _, err := os.Stat(f); err != nil {
			installed = false
		}
	}
	if installed {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// The flags repeat tsparse/.npmrc: no peer dependencies (tree-sitter-cli,
	// a native build tool) and no install scripts, only the prebuilt .wasm.
	cmd := exec.CommandContext(ctx, "npm", "ci", "--prefix", "tsparse",
		"--ignore-scripts", "--legacy-peer-deps", "--no-audit", "--no-fund")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("npm ci --prefix spec/tsparse: %w\n%s", err, out)
	}
	return nil
}

// runParse runs check.mjs with args and returns its output and exit status
// (1: syntax errors found); any other failure to run it fails the test.
func runParse(t *testing.T, args ...string) (string, int) {
	t.Helper()
	installGrammar(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "node", append([]string{parseScript}, args...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return stdout.String(), 0
	case errors.As(err, &exit) && exit.ExitCode() == 1:
		return stdout.String(), 1
	default:
		t.Fatalf("node %s %s: %v\n%s%s", parseScript, strings.Join(args, " "), err, stdout.String(), stderr.String())
		return "", 0
	}
}

// Every module in spec/ parses with the TLA+ grammar: no ERROR or MISSING node.
func TestModulesParseWithTheTLAGrammar(t *testing.T) {
	out, status := runParse(t)
	if status != 0 {
		t.Fatalf("spec/*.tla has syntax errors (tree-sitter-tlaplus):\n%s", out)
	}
}

// errorLine matches the report of one syntax error: path:line:column: ...
var errorLine = regexp.MustCompile(`(?m)^(.+\.tla):(\d+):(\d+): (?:syntax )?error: (.*)$`)

// Broken variants of the module are rejected, at the definition that is
// broken: the syntax check can fail, and says where. Where tree-sitter's error
// recovery gives up on the whole module (an unclosed bracket), check.mjs finds
// the first definition the module stops parsing in. All variants go to one
// run of check.mjs (loading the grammar costs most of a run).
func TestParseCheckRejectsBrokenModules(t *testing.T) {
	b, err := os.ReadFile("PodPipeline.tla")
	if err != nil {
		t.Fatal(err)
	}
	src := string(b)
	lines := strings.Split(src, "\n")
	type variant struct {
		name, old, new string
		want           string // in the report, if set
		file           string
		first, last    int // the lines a report must fall in
	}
	variants := []*variant{
		{name: "IF without ELSE", old: "THEN revision + 1 ELSE revision\n", new: "THEN revision + 1\n"},
		{name: "definition without ==", old: "KubeletReady(n) == nodeUp[n] /\\ kubeletUp[n]", new: "KubeletReady(n) nodeUp[n] /\\ kubeletUp[n]"},
		{name: "unclosed bracket", old: "KubeletReady(n) == nodeUp[n] /\\ kubeletUp[n]", new: "KubeletReady(n) == nodeUp[n] /\\ kubeletUp[n"},
		{name: "unclosed parenthesis", old: "/\\ KubeletLag = 1 /\\ KubeletReady(n)\n", new: "/\\ KubeletLag = 1 /\\ KubeletReady(n\n"},
		{name: "LET without IN", old: "sc == after(\"Scheduler\") IN", new: "sc == after(\"Scheduler\")"},
		{name: "unclosed tuple", old: "    /\\ UNCHANGED <<storeVars, runtimeVars, kubeletKnows,", new: "    /\\ UNCHANGED <<<storeVars, runtimeVars, kubeletKnows,"},
		{name: "EXCEPT without !", old: "[kubeletView EXCEPT ![p] = ProjKubelet(p)]", new: "[kubeletView EXCEPT [p] = ProjKubelet(p)]"},
		{name: "dangling conjunction", old: "/\\ KubeletLag = 1 /\\ KubeletReady(n)\n", new: "/\\ KubeletLag = 1 /\\ KubeletReady(n) /\\\n"},
		{name: "quantifier without colon", old: "/\\ \\E k \\in Slots : SlotFree(", new: "/\\ \\E k \\in Slots SlotFree("},
		// Not syntax errors but what SANY reports next: a name redefined
		// where it is visible.
		{name: "bound variable named like a parameter", old: "\\E k \\in Slots : SlotFree(<<d, v, k>>)", new: "\\E d \\in Slots : SlotFree(<<d, v, d>>)",
			want: `multiply-defined symbol "d"`},
		{name: "bound variable named like a state variable", old: "    \\/ \\E p \\in Pods :", new: "    \\/ \\E up \\in Pods :",
			want: `multiply-defined symbol "up"`},
		{name: "definition made twice", old: "KubeletReady(n) == nodeUp[n] /\\ kubeletUp[n]\n", new: "KubeletReady(n) == nodeUp[n] /\\ kubeletUp[n]\nKubeletReady(n) == TRUE\n",
			want: `multiply-defined symbol "KubeletReady"`},
		{name: "LET definition named like a definition", old: `sc == after("Scheduler") IN`, new: `Pods == after("Scheduler") IN`,
			want: `multiply-defined symbol "Pods"`},
		// Level errors (SANY's level checking).
		{name: "box of an action", old: "Spec == Init /\\ [][Next]_vars /\\ Fairness", new: "Spec == Init /\\ []Next /\\ Fairness",
			want: "level: [] or <> of an action"},
		{name: "primed action", old: "    /\\ revision' = IF TrackRevisions = 1 THEN revision + 1 ELSE revision\n", new: "    /\\ revision'' = IF TrackRevisions = 1 THEN revision + 1 ELSE revision\n",
			want: "level: priming an expression of action level"},
		{name: "fairness of a temporal formula", old: "WF_vars(DeploymentObserve(d))", new: "WF_vars([]DeploymentObserve(d))",
			want: "level: a temporal formula where an action belongs"},
		{name: "action-level subscript", old: "WF_vars(DeploymentObserve(d))", new: "WF_<<revision'>>(DeploymentObserve(d))",
			want: "level: a subscript of action level"},
	}
	dir := t.TempDir()
	var files []string
	for i, v := range variants {
		at := strings.Index(src, v.old)
		if at < 0 {
			t.Fatalf("%s: the module no longer contains %q", v.name, v.old)
		}
		// A report must fall between the start of the definition the change
		// is in (the last line before it starting in column 0 with a name)
		// and the line after the change.
		v.last = strings.Count(src[:at], "\n") + 1
		v.first = v.last
		for v.first > 1 && !startsDefinition(lines[v.first-1]) {
			v.first--
		}
		v.last++
		v.file = filepath.Join(dir, strconv.Itoa(i), "PodPipeline.tla")
		if err := os.MkdirAll(filepath.Dir(v.file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(v.file, []byte(src[:at]+v.new+src[at+len(v.old):]), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, v.file)
	}
	out, status := runParse(t, files...)
	if status != 1 {
		t.Fatalf("exit status %d, want 1; output:\n%s", status, out)
	}
	type report struct {
		line int
		msg  string
	}
	reported := map[string][]report{}
	for _, m := range errorLine.FindAllStringSubmatch(out, -1) {
		n, _ := strconv.Atoi(m[2])
		reported[m[1]] = append(reported[m[1]], report{n, m[4]})
	}
	for _, v := range variants {
		if !slices.ContainsFunc(reported[v.file], func(r report) bool {
			return r.line >= v.first && r.line <= v.last && strings.Contains(r.msg, v.want)
		}) {
			t.Errorf("%s: no error %q reported in lines %d-%d (reported: %v); output:\n%s",
				v.name, v.want, v.first, v.last, reported[v.file], out)
		}
	}
}

func startsDefinition(line string) bool {
	return line != "" && (line[0] >= 'A' && line[0] <= 'Z' || line[0] >= 'a' && line[0] <= 'z')
}

// A small module with an unbalanced IF/THEN and one with a missing == are
// rejected at the line of the mistake, each with its source line shown.
func TestParseCheckReportsLineAndSource(t *testing.T) {
	dir := t.TempDir()
	cases := []struct{ name, src, want string }{
		{"IfWithoutElse", "---- MODULE IfWithoutElse ----\nEXTENDS Naturals\nVARIABLE x\nInit == x = 0\nNext == IF x > 1 THEN x' = x + 1\nFoo == x\n====\n",
			"IfWithoutElse.tla:5:"},
		{"NoDefEq", "---- MODULE NoDefEq ----\nEXTENDS Naturals\nVARIABLE x\nInit x = 0\nNext == x' = x + 1\n====\n",
			"NoDefEq.tla:4:5: syntax error: missing \"==\"\n  Init x = 0\n"},
	}
	var files []string
	for _, tc := range cases {
		file := filepath.Join(dir, tc.name+".tla")
		if err := os.WriteFile(file, []byte(tc.src), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, file)
	}
	out, status := runParse(t, files...)
	if status != 1 {
		t.Errorf("exit status %d, want 1; output:\n%s", status, out)
	}
	for _, tc := range cases {
		if !strings.Contains(out, tc.want) {
			t.Errorf("%s: want a report containing %q; output:\n%s", tc.name, tc.want, out)
		}
	}
	// And the same modules fixed pass: the check does not reject everything.
	file := filepath.Join(dir, "Fixed.tla")
	fixed := "---- MODULE Fixed ----\nEXTENDS Naturals\nVARIABLE x\nInit == x = 0\nNext == IF x > 1 THEN x' = x + 1 ELSE x' = 0\nFoo == x\n====\n"
	if err := os.WriteFile(file, []byte(fixed), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, status := runParse(t, file); status != 0 {
		t.Errorf("a well-formed module: exit status %d, want 0; output:\n%s", status, out)
	}
}

// Declared is one line of check.mjs --names: what a module declares at top
// level as the TLA+ grammar reads it.
type Declared struct {
	File        string         `json:"file"`
	Module      string         `json:"module"`
	Extends     []string       `json:"extends"`
	Constants   []string       `json:"constants"`
	Variables   []string       `json:"variables"`
	Definitions map[string]int `json:"definitions"`
	// Uses lists, for each definition, the names its body refers to.
	Uses map[string][]string `json:"uses"`
	// Levels gives each definition's level: 0 constant, 1 state, 2 action,
	// 3 temporal.
	Levels map[string]int `json:"levels"`
}

// GrammarDeclarations is what tree-sitter-tlaplus reads declared at the top
// level of PodPipeline.tla (check.mjs --names). It is exported for the
// name-equality test with the Go model in spec_test.
func GrammarDeclarations(t *testing.T) *Declared {
	t.Helper()
	declarations.Lock()
	defer declarations.Unlock()
	if declarations.got == nil {
		declarations.got = readDeclarations(t)
	}
	return declarations.got
}

// declarations caches what check.mjs --names reads (a node run each).
var declarations struct {
	sync.Mutex
	got *Declared
}

func readDeclarations(t *testing.T) *Declared {
	t.Helper()
	out, status := runParse(t, "--names", "PodPipeline.tla")
	if status != 0 {
		t.Fatalf("PodPipeline.tla has syntax errors:\n%s", out)
	}
	var got *Declared
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "{") {
			got = &Declared{}
			if err := json.Unmarshal(sc.Bytes(), got); err != nil {
				t.Fatalf("check.mjs --names: %v", err)
			}
		}
	}
	if got == nil || got.Module != "PodPipeline" {
		t.Fatalf("check.mjs --names printed no declarations of module PodPipeline:\n%s", out)
	}
	if len(got.Variables) == 0 || len(got.Definitions) == 0 {
		t.Fatalf("the grammar found %d variables and %d definitions", len(got.Variables), len(got.Definitions))
	}
	return got
}

// The TLA+ grammar and spec/tlacheck read the same constants, variables and
// operator definitions (with arities) out of PodPipeline.tla, so tlacheck's
// checks work on the module as the TLA+ grammar reads it.
func TestGrammarAndTlacheckSeeTheSameDeclarations(t *testing.T) {
	got := GrammarDeclarations(t)
	src, err := os.ReadFile("PodPipeline.tla")
	if err != nil {
		t.Fatal(err)
	}
	m, err := tlacheck.Parse(string(src))
	if err != nil {
		t.Fatal(err)
	}
	want := m.Declarations()
	for _, c := range []struct {
		what      string
		got, want []string
	}{
		{"EXTENDS", got.Extends, want.Extends},
		{"CONSTANTS", got.Constants, want.Constants},
		{"VARIABLES", got.Variables, want.Variables},
		{"definitions", slices.Sorted(maps.Keys(got.Definitions)), slices.Sorted(maps.Keys(want.Definitions))},
	} {
		if !slices.Equal(c.got, c.want) {
			t.Errorf("%s: tree-sitter-tlaplus reads %v, tlacheck %v", c.what, c.got, c.want)
		}
	}
	for name, arity := range want.Definitions {
		if a, ok := got.Definitions[name]; ok && a != arity {
			t.Errorf("%s: arity %d by the grammar, %d by tlacheck", name, a, arity)
		}
	}
}

// Every configuration's invariants are state predicates, Init is one, Next is
// an action and Spec a temporal formula, by the levels the grammar's parse
// tree gives (what TLC checks before it starts). STORE_1, a step property,
// must come out above state level: the computation can tell them apart.
func TestConfigurationsUseDefinitionsOfTheRightLevel(t *testing.T) {
	tla := GrammarDeclarations(t)
	levelOf := func(name string) int {
		l, ok := tla.Levels[name]
		if !ok {
			t.Fatalf("%s is not defined in PodPipeline.tla", name)
		}
		return l
	}
	for name, want := range map[string]int{"Init": 1, "Next": 2, "Spec": 3} {
		if got := levelOf(name); got != want {
			t.Errorf("%s has level %d, want %d", name, got, want)
		}
	}
	files, err := Configs.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	invariants := func(cfg string) []string {
		var names []string
		in := false
		for _, line := range strings.Split(cfg, "\n") {
			if i := strings.Index(line, "\\*"); i >= 0 {
				line = line[:i]
			}
			fields := strings.Fields(line)
			if len(fields) == 0 {
				continue
			}
			if line[0] != ' ' && line[0] != '\t' {
				in = fields[0] == "INVARIANT" || fields[0] == "INVARIANTS"
				fields = fields[1:]
			}
			if in {
				names = append(names, fields...)
			}
		}
		return names
	}
	checked := 0
	for _, f := range files {
		b, err := Configs.ReadFile(f.Name())
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range invariants(string(b)) {
			checked++
			if l := levelOf(name); l > 1 {
				t.Errorf("%s: invariant %s has level %d (an invariant must be a state predicate)", f.Name(), name, l)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no invariants found in spec/*.cfg")
	}
	if l := levelOf("STORE_1"); l <= 1 {
		t.Errorf("STORE_1 (a step property) has level %d: the level computation cannot tell actions from states", l)
	}
}
