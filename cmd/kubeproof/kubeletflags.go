package main

import (
	"fmt"
	"strings"
)

// pairsFlag is a flag of key<sep>value pairs, comma-separated, kept as
// the text given, whose syntax is checked when it is set, as upstream's
// kubelet parses its map flags (--eviction-hard and --eviction-soft with
// "<", --eviction-soft-grace-period and --eviction-minimum-reclaim with
// "="): an item without sep does not parse ("malformed pair, expect
// string<string"), so it is a flag error, before anything is validated.
// As upstream's, the flag's first Set replaces the default and each later
// one adds its pairs after the earlier ones' (a key given again keeps its
// last value: the eviction package reads the text so).
type pairsFlag struct {
	value *string
	sep   string
	set   bool
}

// newPairsFlag is a pairsFlag over *value, which it sets to def.
func newPairsFlag(value *string, def, sep string) *pairsFlag {
	*value = def
	return &pairsFlag{value: value, sep: sep}
}

func (f *pairsFlag) Set(s string) error {
	for item := range strings.SplitSeq(s, ",") {
		// Upstream's "=" flags skip a blank item, its "<" flags only an
		// empty one: " " is malformed there.
		skip := item == "" || f.sep == "=" && strings.TrimSpace(item) == ""
		if !skip && !strings.Contains(item, f.sep) {
			return fmt.Errorf("malformed pair, expect string%sstring", f.sep)
		}
	}
	if f.set && *f.value != "" && s != "" {
		s = *f.value + "," + s
	} else if f.set && s == "" {
		s = *f.value
	}
	*f.value, f.set = s, true
	return nil
}

func (f *pairsFlag) String() string { return *f.value }

func (*pairsFlag) Type() string { return "mapStringString" }
