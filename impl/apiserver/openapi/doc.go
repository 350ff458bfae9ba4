// Package openapi publishes the API server's OpenAPI documents: a Swagger 2.0
// document at /openapi/v2 (JSON, and the protobuf form kubectl asks for) and
// OpenAPI 3.0 documents per group/version under /openapi/v3, with the
// discovery index at /openapi/v3 itself.
//
// Nothing is hand-written per kind: the schemas are derived at start-up by
// reflection over the Go types of every served resource (their New and
// NewList objects) and every type those reference, named the way upstream's
// openapi-gen names them ("io.k8s.api.core.v1.Pod"). Field semantics kubectl
// relies on come from the types themselves: json tags give the properties,
// patchStrategy/patchMergeKey tags give the strategic-merge-patch extensions
// that `kubectl apply` uses, and list/map semantics (x-kubernetes-list-type,
// x-kubernetes-list-map-keys, x-kubernetes-map-type) are taken from
// client-go's structured-merge-diff schema of the built-in types.
//
// The paths describe every resource's operations (list, read, create,
// replace, patch, delete, deletecollection, watch and the status, scale and
// binding subresources) with their query parameters, including dryRun and
// fieldValidation: kubectl looks for fieldValidation on a kind's PATCH
// operation to decide whether the server validates fields itself.
//
// Documents are built once by NewHandler and served from memory with ETags,
// conditional requests and gzip; their protobuf and compressed forms are
// made on first request and kept.
package openapi
