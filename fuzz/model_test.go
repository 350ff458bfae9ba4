package fuzz

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kubeproof/kubeproof/model"
)

// maxWalk bounds the length of one fuzzed action sequence.
const maxWalk = 400

// FuzzModel decodes a configuration and a sequence of actions from the
// fuzzer's bytes and walks the model: the configuration's bounds go up to
// the state layout's limits and fault budgets of up to 9 crashes, watch
// drops, node failures and evictions each — far beyond what the exhaustive
// checker can enumerate — and each later byte picks one of the enabled
// actions. Property: every invariant and step property of the
// specification holds at every step.
func FuzzModel(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{2, 1, 2, 1, 1, 0, 3, 1, 3, 2, 2, 2, 2, 1, 1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add([]byte("\x02\x01\x03\x01\x00\x01\x03\x02\x03\x05\x01\x04\x03\x02\x01" + strings.Repeat("\x00\x07\x03\x11", 50)))
	f.Fuzz(func(t *testing.T, data []byte) {
		in := &input{data: data}
		m, err := model.New(fuzzConfig(in), "")
		if err != nil {
			return // bounds the specification excludes
		}
		if trace, violated := walkModel(m, in); violated != "" {
			t.Fatalf("%s violated after:\n%s", violated, trace)
		}
	})
}

// safetyProperties are the specification's invariants and step
// properties (liveness needs whole behaviours, not one walk).
var safetyProperties = func() []model.Property {
	var out []model.Property
	for _, p := range model.Properties {
		if p.Invariant != nil || p.Step != nil {
			out = append(out, p)
		}
	}
	return out
}()

// fuzzConfig decodes bounds from in.
func fuzzConfig(in *input) model.Config {
	c := model.Config{
		Name:            "fuzz",
		NumNodes:        1 + in.intn(model.MaxNodes),
		NumDeployments:  1 + in.intn(model.MaxDeployments),
		NumVersions:     1 + in.intn(model.MaxVersions),
		PodsPerRS:       1 + in.intn(model.MaxPodsPerRS),
		MaxSurge:        in.intn(3),
		MaxUnavailable:  in.intn(3),
		IPsPerNode:      in.intn(model.MaxIPs + 1),
		MaxScales:       in.intn(10),
		MaxDeletes:      in.intn(10),
		MaxCrashes:      in.intn(10),
		MaxWatchDrops:   in.intn(10),
		MaxNodeFailures: in.intn(10),
		MaxEvictions:    in.intn(10),
	}
	c.Replicas = in.intn(c.PodsPerRS + 1)
	c.Capacity = in.intn(model.MaxPods + 1)
	for _, p := range safetyProperties {
		c.Invariants = append(c.Invariants, p.ID)
	}
	return c
}

// walkModel takes the actions in chooses from the initial state, checking
// every safety property after each; it returns the trace and the first
// violated property ("" if none).
func walkModel(m *model.Model, in *input) (string, string) {
	type step struct {
		a model.Action
		t model.State
	}
	s := m.Init()[0]
	var trace strings.Builder
	for _, p := range safetyProperties {
		if p.Invariant != nil && !p.Invariant(m, &s) {
			return "(initial state)", p.ID
		}
	}
	for range maxWalk {
		if len(in.data) == 0 {
			break
		}
		var next []step
		m.Successors(&s, func(a model.Action, t *model.State) { next = append(next, step{a, *t}) })
		if len(next) == 0 {
			break
		}
		st := next[in.intn(len(next))]
		fmt.Fprintf(&trace, "  %s\n", st.a)
		for _, p := range safetyProperties {
			if p.Invariant != nil && !p.Invariant(m, &st.t) || p.Step != nil && !p.Step(m, &s, &st.t) {
				return trace.String(), p.ID
			}
		}
		s = st.t
	}
	return trace.String(), ""
}

// The walk must be able to fail: with a mutant that breaks a safety
// property, random walks find a violation of it.
func TestModelWalkCatchesMutants(t *testing.T) {
	for _, name := range []string{model.MutantSchedulerIgnoresCapacity, model.MutantKubeletReusesIP} {
		mi, _ := model.LookupMutant(name)
		found := false
		for seed := 0; seed < 2000 && !found; seed++ {
			data := make([]byte, 600)
			x := uint32(seed*2654435761 + 1)
			for i := range data {
				x ^= x << 13
				x ^= x >> 17
				x ^= x << 5
				data[i] = byte(x)
			}
			in := &input{data: data}
			m, err := model.New(fuzzConfig(in), name)
			if err != nil {
				continue
			}
			if _, violated := walkModel(m, in); violated == mi.Breaks {
				found = true
			}
		}
		if !found {
			t.Errorf("mutant %s: no random walk violated %s", name, mi.Breaks)
		}
	}
}
