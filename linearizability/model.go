package linearizability

import (
	"fmt"
	"math"
	"sort"

	"github.com/anishathalye/porcupine"
)

// keyState is the state of one key in the per-key model.
//
// RV is the resourceVersion of the current version, 0 while it is unknown
// (an ambiguous write took effect and nobody has read its revision yet).
// Floor is a revision every later write of this key must exceed: the
// revision of the last write or read known to have happened.
type keyState struct {
	Exists bool
	Value  string
	Group  string
	RV     int64
	Floor  int64
}

// preconditionHolds says whether a resourceVersion precondition (0 = none)
// can hold in s. With an unknown RV any precondition above the floor may
// be the true one.
func (s keyState) preconditionHolds(pre int64) bool {
	return pre == 0 || s.RV == pre || (s.RV == 0 && pre > s.Floor)
}

// preconditionMayFail says whether a Conflict is possible in s.
func (s keyState) preconditionMayFail(pre int64) bool {
	return pre != 0 && s.RV != pre
}

func (s keyState) newerThanCurrent(rv int64) bool { return rv > s.Floor && rv > s.RV }

// applied is the state after a successful write that set value/group at
// revision rv (0: unknown revision).
func (s keyState) applied(o *Op, rv int64) keyState {
	floor := s.Floor
	if rv > floor {
		floor = rv
	}
	if s.RV > floor {
		floor = s.RV
	}
	if o.Kind == Delete {
		return keyState{Floor: floor}
	}
	return keyState{Exists: true, Value: o.Value, Group: o.Group, RV: rv, Floor: floor}
}

// stepKey is the non-deterministic step of the per-key model: the states
// the key may be in after o, or none if o's recorded outcome is impossible
// in s.
func stepKey(s keyState, o *Op) []keyState {
	switch o.Kind {
	case Get:
		switch o.Outcome {
		case OK:
			obj := o.Object
			if !s.Exists || s.Value != obj.Value || s.Group != obj.Group {
				return nil
			}
			if s.RV == obj.RV {
				return []keyState{s}
			}
			if s.RV == 0 && obj.RV > s.Floor {
				s.RV, s.Floor = obj.RV, obj.RV
				return []keyState{s}
			}
			return nil
		case NotFound:
			if s.Exists {
				return nil
			}
			return []keyState{s}
		}
	case Create:
		switch o.Outcome {
		case OK:
			if s.Exists || !s.newerThanCurrent(o.Object.RV) {
				return nil
			}
			return []keyState{s.applied(o, o.Object.RV)}
		case AlreadyExists:
			if !s.Exists {
				return nil
			}
			return []keyState{s}
		case Ambiguous:
			if s.Exists {
				return []keyState{s}
			}
			return []keyState{s, s.applied(o, 0)}
		}
	case Update, Patch, Delete:
		switch o.Outcome {
		case OK:
			if !s.Exists || !s.preconditionHolds(o.Precondition) {
				return nil
			}
			if o.Kind == Delete {
				return []keyState{s.applied(o, 0)}
			}
			if !s.newerThanCurrent(o.Object.RV) {
				return nil
			}
			return []keyState{s.applied(o, o.Object.RV)}
		case Conflict:
			if !s.Exists || !s.preconditionMayFail(o.Precondition) {
				return nil
			}
			return []keyState{s}
		case NotFound:
			if s.Exists {
				return nil
			}
			return []keyState{s}
		case Ambiguous:
			if !s.Exists || !s.preconditionHolds(o.Precondition) {
				return []keyState{s}
			}
			return []keyState{s, s.applied(o, 0)}
		}
	}
	// Outcomes the model does not constrain (definite failures) are no-ops.
	return []keyState{s}
}

// inPerKeyModel says whether o is checked by the per-key porcupine model:
// every write with a decisive or ambiguous outcome and every quorum get.
func inPerKeyModel(o *Op) bool {
	if o.Outcome == Failed || o.Outcome == Expired {
		return false
	}
	if o.Kind == Get {
		return o.ResourceVersion == "" && o.Outcome != Ambiguous
	}
	return o.isWrite()
}

// keyModel is the porcupine model of one key of the object store,
// partitioned by key (see the package documentation for why that is
// sound together with the revision checks).
var keyModel = (&porcupine.NondeterministicModel{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		for _, op := range history {
			k := op.Input.(*Op).Key
			byKey[k] = append(byKey[k], op)
		}
		keys := make([]string, 0, len(byKey))
		for k := range byKey {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() []interface{} { return []interface{}{keyState{}} },
	Step: func(state, input, _ interface{}) []interface{} {
		next := stepKey(state.(keyState), input.(*Op))
		out := make([]interface{}, len(next))
		for i := range next {
			out[i] = next[i]
		}
		return out
	},
	Equal: func(a, b interface{}) bool { return a.(keyState) == b.(keyState) },
	DescribeOperation: func(input, _ interface{}) string {
		return describeOp(input.(*Op))
	},
	DescribeState: func(state interface{}) string {
		s := state.(keyState)
		if !s.Exists {
			return fmt.Sprintf("absent (floor %d)", s.Floor)
		}
		rv := fmt.Sprint(s.RV)
		if s.RV == 0 {
			rv = fmt.Sprintf("? > %d", s.Floor)
		}
		return fmt.Sprintf("%s [%s] @%s", s.Value, s.Group, rv)
	},
}).ToModel()

// porcupineHistory converts the per-key part of h into porcupine
// operations.
//
// An ambiguous write may take effect any time after its call, so it
// never returns (Return = MaxInt64) — unless its value was observed: then
// it did happen, at the observed revision, before the first observation
// of its value returned. It enters the model as a success returning then.
// An unobserved one that the watch streams prove did not happen is left
// out (see ambiguous.go for why both are sound).
func porcupineHistory(h *History, t *timeline) []porcupine.Operation {
	var ops []porcupine.Operation
	notDone := unobservedDidNotHappen(h, t)
	for i := range h.Ops {
		o := &h.Ops[i]
		if !inPerKeyModel(o) || notDone[o] {
			continue
		}
		ret := o.Return
		if o.Outcome == Ambiguous {
			ret = math.MaxInt64
			if obj, ok := t.byValue[o.Value]; ok && o.Kind != Delete {
				happened := *o
				happened.Outcome, happened.Object = OK, &obj
				o = &happened
				ret = max(t.seenAt[o.Value], o.Call)
			}
		}
		ops = append(ops, porcupine.Operation{ClientId: o.Client, Input: o, Call: o.Call, Output: nil, Return: ret})
	}
	return ops
}

func describeOp(o *Op) string {
	var s string
	switch o.Kind {
	case Create:
		s = fmt.Sprintf("create(%s=%s[%s])", o.Key, o.Value, o.Group)
	case Update, Patch:
		s = fmt.Sprintf("%s(%s=%s[%s]", o.Kind, o.Key, o.Value, o.Group)
		if o.Precondition != 0 {
			s += fmt.Sprintf(", rv=%d", o.Precondition)
		}
		s += ")"
	case Delete:
		s = fmt.Sprintf("delete(%s", o.Key)
		if o.Precondition != 0 {
			s += fmt.Sprintf(", rv=%d", o.Precondition)
		}
		s += ")"
	case Get:
		s = fmt.Sprintf("get(%s, rv=%q)", o.Key, o.ResourceVersion)
	case List:
		s = fmt.Sprintf("list(rv=%q match=%q limit=%d)", o.ResourceVersion, o.Match, o.Limit)
	}
	switch {
	case o.Outcome == OK && o.Object != nil:
		return fmt.Sprintf("%s -> %s[%s]@%d", s, o.Object.Value, o.Object.Group, o.Object.RV)
	case o.Outcome == OK && o.Kind == List:
		return fmt.Sprintf("%s -> %d items @%d", s, len(o.Items), o.ListRV)
	default:
		return fmt.Sprintf("%s -> %s", s, o.Outcome)
	}
}
