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
type pairsFlag struct {
	value *string
	sep   string
}

// newPairsFlag is a pairsFlag over *value, which it sets to def.
func newPairsFlag(value *string, def, sep string) pairsFlag {
	*value = def
	return pairsFlag{value: value, sep: sep}
}

func (f pairsFlag) Set(s string) error {
	for item := range strings.SplitSeq(s, ",") {
		if item != "" && !strings.Contains(item, f.sep) {
			return fmt.Errorf("malformed pair, expect string%sstring", f.sep)
		}
	}
	*f.value = s
	return nil
}

func (f pairsFlag) String() string { return *f.value }

func (pairsFlag) Type() string { return "mapStringString" }
