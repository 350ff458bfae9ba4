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
var errorLine = regexp.MustCompile(`(?m)^(.+\.tla):(\d+):(\d+): syntax error: `)

// Broken variants of the module are rejected, at the definition that is
// broken: the syntax check can fail, and says where.
func TestParseCheckRejectsBrokenModules(t *testing.T) {
	b, err := os.ReadFile("PodPipeline.tla")
	if err != nil {
		t.Fatal(err)
	}
	src := string(b)
	for _, tc := range []struct {
		name, old, new string
		// anywhere: tree-sitter's error recovery gives up on the whole
		// module (one ERROR node from line 1), so only the rejection is
		// checked, not the line.
		anywhere bool
	}{
		{"IF without ELSE", "THEN revision + 1 ELSE revision\n", "THEN revision + 1\n", false},
		{"definition without ==", "KubeletReady(n) == nodeUp[n] /\\ kubeletUp[n]", "KubeletReady(n) nodeUp[n] /\\ kubeletUp[n]", false},
		{"unclosed bracket", "KubeletReady(n) == nodeUp[n] /\\ kubeletUp[n]", "KubeletReady(n) == nodeUp[n] /\\ kubeletUp[n", true},
		{"unclosed parenthesis", "/\\ KubeletLag = 1 /\\ KubeletReady(n)\n", "/\\ KubeletLag = 1 /\\ KubeletReady(n\n", false},
		{"LET without IN", "sc == after(\"Scheduler\") IN", "sc == after(\"Scheduler\")", false},
		{"unclosed tuple", "    /\\ UNCHANGED <<storeVars, runtimeVars, kubeletKnows,", "    /\\ UNCHANGED <<<storeVars, runtimeVars, kubeletKnows,", false},
		{"EXCEPT without !", "[kubeletView EXCEPT ![p] = ProjKubelet(p)]", "[kubeletView EXCEPT [p] = ProjKubelet(p)]", false},
		{"dangling conjunction", "/\\ KubeletLag = 1 /\\ KubeletReady(n)\n", "/\\ KubeletLag = 1 /\\ KubeletReady(n) /\\\n", false},
		{"quantifier without colon", "/\\ \\E k \\in Slots : SlotFree(", "/\\ \\E k \\in Slots SlotFree(", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			at := strings.Index(src, tc.old)
			if at < 0 {
				t.Fatalf("the module no longer contains %q", tc.old)
			}
			broken := src[:at] + tc.new + src[at+len(tc.old):]
			brokenLine := strings.Count(src[:at], "\n") + 1
			// The definition the change is in starts at the last line before
			// it that starts in column 0 with a name.
			lines := strings.Split(src, "\n")
			defLine := brokenLine
			for defLine > 1 && !startsDefinition(lines[defLine-1]) {
				defLine--
			}
			file := filepath.Join(t.TempDir(), "PodPipeline.tla")
			if err := os.WriteFile(file, []byte(broken), 0o644); err != nil {
				t.Fatal(err)
			}
			out, status := runParse(t, file)
			if status != 1 {
				t.Fatalf("exit status %d, want 1; output:\n%s", status, out)
			}
			var reported []int
			for _, m := range errorLine.FindAllStringSubmatch(out, -1) {
				n, _ := strconv.Atoi(m[2])
				reported = append(reported, n)
			}
			if tc.anywhere {
				return
			}
			if !slices.ContainsFunc(reported, func(n int) bool { return n >= defLine && n <= brokenLine+1 }) {
				t.Fatalf("no syntax error reported in lines %d-%d (the definition broken at line %d); output:\n%s",
					defLine, brokenLine+1, brokenLine, out)
			}
		})
	}
}

func startsDefinition(line string) bool {
	return line != "" && (line[0] >= 'A' && line[0] <= 'Z' || line[0] >= 'a' && line[0] <= 'z')
}

// A small module with an unbalanced IF/THEN and one with a missing == are
// rejected at the line of the mistake, each with its source line shown.
func TestParseCheckReportsLineAndSource(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, src, want string
	}{
		{"IfWithoutElse", "---- MODULE IfWithoutElse ----\nEXTENDS Naturals\nVARIABLE x\nInit == x = 0\nNext == IF x > 1 THEN x' = x + 1\nFoo == x\n====\n",
			"IfWithoutElse.tla:5:"},
		{"NoDefEq", "---- MODULE NoDefEq ----\nEXTENDS Naturals\nVARIABLE x\nInit x = 0\nNext == x' = x + 1\n====\n",
			"NoDefEq.tla:4:5: syntax error: missing \"==\"\n  Init x = 0\n"},
	} {
		file := filepath.Join(dir, tc.name+".tla")
		if err := os.WriteFile(file, []byte(tc.src), 0o644); err != nil {
			t.Fatal(err)
		}
		out, status := runParse(t, file)
		if status != 1 || !strings.Contains(out, tc.want) {
			t.Errorf("%s: exit status %d, want 1 and a report containing %q; output:\n%s", tc.name, status, tc.want, out)
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

// declared is one line of check.mjs --names.
type declared struct {
	File        string         `json:"file"`
	Module      string         `json:"module"`
	Extends     []string       `json:"extends"`
	Constants   []string       `json:"constants"`
	Variables   []string       `json:"variables"`
	Definitions map[string]int `json:"definitions"`
}

// The TLA+ grammar and spec/tlacheck read the same constants, variables and
// operator definitions (with arities) out of PodPipeline.tla, so tlacheck's
// checks — and the name-equality test against the Go model, which uses the
// same reading of the module — work on the module as TLA+ defines it.
func TestGrammarAndTlacheckSeeTheSameDeclarations(t *testing.T) {
	out, status := runParse(t, "--names", "PodPipeline.tla")
	if status != 0 {
		t.Fatalf("PodPipeline.tla has syntax errors:\n%s", out)
	}
	var got *declared
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "{") {
			got = &declared{}
			if err := json.Unmarshal(sc.Bytes(), got); err != nil {
				t.Fatalf("check.mjs --names: %v", err)
			}
		}
	}
	if got == nil {
		t.Fatalf("check.mjs --names printed no declarations:\n%s", out)
	}
	src, err := os.ReadFile("PodPipeline.tla")
	if err != nil {
		t.Fatal(err)
	}
	m, err := tlacheck.Parse(string(src))
	if err != nil {
		t.Fatal(err)
	}
	want := m.Declarations()
	if got.Module != "PodPipeline" {
		t.Errorf("module name %q, want PodPipeline", got.Module)
	}
	if len(got.Variables) == 0 || len(got.Definitions) == 0 {
		t.Fatalf("the grammar found %d variables and %d definitions", len(got.Variables), len(got.Definitions))
	}
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
