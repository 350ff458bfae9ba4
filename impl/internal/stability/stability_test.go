package stability

import (
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// TestHelp: each level gives component-base's "[LEVEL] " prefix (ALPHA for
// the empty level), a deprecated metric gets "(Deprecated since V) " after
// it, and a help that has a prefix already is not prefixed twice.
func TestHelp(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{Alpha.Help("Counter of x."), "[ALPHA] Counter of x."},
		{Beta.Help("Counter of x."), "[BETA] Counter of x."},
		{Stable.Help("Counter of x."), "[STABLE] Counter of x."},
		{Internal.Help("Counter of x."), "[INTERNAL] Counter of x."},
		{Level("").Help("Counter of x."), "[ALPHA] Counter of x."},
		{Stable.Help(Stable.Help("Counter of x.")), "[STABLE] Counter of x."},
		{Beta.Help("[ALPHA] Counter of x."), "[ALPHA] Counter of x."},
		{Stable.DeprecatedHelp("1.34.0", "Counter of x."), "[STABLE] (Deprecated since 1.34.0) Counter of x."},
		{Stable.DeprecatedHelp("1.34.0", "[STABLE] (Deprecated since 1.34.0) Counter of x."), "[STABLE] (Deprecated since 1.34.0) Counter of x."},
		// Only a bracketed level followed by a space is a prefix.
		{Alpha.Help("[ALPHA]Counter"), "[ALPHA] [ALPHA]Counter"},
		{Alpha.Help("[GA] Counter"), "[ALPHA] [GA] Counter"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

// TestHelpsAndUnannotated: Helps reads every described metric, vectors
// without series included; Unannotated reports the scraped families
// without a prefix, leaving out the Go and process collectors'.
func TestHelpsAndUnannotated(t *testing.T) {
	reg := prometheus.NewRegistry()
	rec := &Recorder{Registerer: reg}
	plain := prometheus.NewCounter(prometheus.CounterOpts{Name: "plain_total", Help: "No \"level\" here."})
	vec := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "vec", Help: Beta.Help("A vector.")}, []string{"l"})
	rec.MustRegister(plain, vec, collectors.NewGoCollector())
	helps, err := Helps(rec.Collectors()...)
	if err != nil {
		t.Fatal(err)
	}
	if helps["plain_total"] != `No "level" here.` || helps["vec"] != "[BETA] A vector." || helps["go_goroutines"] == "" {
		t.Errorf("Helps: %q", helps)
	}
	got, err := Unannotated(reg)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []string{"plain_total"}) {
		t.Errorf("Unannotated = %q, want [plain_total]", got)
	}
	if err := rec.Register(plain); err == nil {
		t.Errorf("registering twice: no error")
	}
	if n := len(rec.Collectors()); n != 3 {
		t.Errorf("%d collectors recorded, want 3", n)
	}
}

// TestMismatches: an unprefixed help, a missing metric and a wrong level
// are each reported; the Go collector's are not.
func TestMismatches(t *testing.T) {
	got := Mismatches(map[string]string{"a": "[ALPHA] A.", "b": "B.", "c": "[BETA] C.", "go_x": "X."},
		map[string]string{"a": "[ALPHA] ", "c": "[STABLE] ", "d": "[ALPHA] "})
	want := []string{
		`b: help "B." has no stability level`,
		`c: help "[BETA] C.", want it to start with "[STABLE] "`,
		"d: not registered",
	}
	if !slices.Equal(got, want) {
		t.Errorf("Mismatches = %q, want %q", got, want)
	}
}
