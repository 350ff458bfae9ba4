// Package fuzz holds kubeproof's fuzz targets (go test -fuzz) and their
// campaign runner (run.sh). Every target lives in a _test.go file of this
// package and drives the code under test through its exported API:
//
//   - FuzzDecode: request bodies of every served kind in JSON, YAML and
//     protobuf through the server's decoders, defaulting and validation;
//     decode → encode → decode is stable.
//   - FuzzHTTP: method × path × query × headers × body against one
//     in-process API server on an embedded etcd, with `kubeproof
//     apiserver`'s default admission plugins; no 5xx outside the
//     documented list, storage changes only on a 2xx answer, and nothing
//     stored fails validation.
//   - FuzzPatch: JSON, merge and strategic merge patches of live objects.
//   - FuzzWebhook: writes answered by mutating and validating admission
//     webhooks served in-process with fuzzed answers; the answer and what
//     is stored are kube-apiserver's for those webhook answers. Events
//     are written through both event APIs for webhooks under matchPolicy
//     Exact and Equivalent, and answers are sometimes asked as protobuf.
//   - FuzzLabelSelector, FuzzFieldSelector, FuzzContinueToken, FuzzListQuery:
//     selectors, resourceVersion values and continue tokens, alone and
//     through GET list.
//   - FuzzScheduler: random nodes and pods through Filter and Score.
//   - FuzzModel: random action sequences of the model never break an
//     invariant.
//   - FuzzAuthorization: random RBAC policies and requests; the RBAC
//     package's decision equals a plain reference evaluator's (a
//     differential oracle).
//
// `go test ./fuzz/...` replays every target's seed corpus (testdata/fuzz
// plus the f.Add seeds) so that findings stay fixed.
package fuzz
