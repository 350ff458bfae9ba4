// Package spec carries the bounded configurations of the TLA+ specification
// (spec/*.cfg) into Go, so that the Go model checker (model/) and TLC read the
// same constants: one source of truth. The specification itself is
// spec/PodPipeline.tla; spec/README.md is the page implementers read first.
package spec

import "embed"

// Configs holds every bounded configuration, spec/*.cfg, by file name.
//
//go:embed *.cfg
var Configs embed.FS
