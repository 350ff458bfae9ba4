// Package linearizability records concurrent client histories against a
// Kubernetes API server — kubeproof's or any other, including a real
// kube-apiserver — and checks them against what Kubernetes promises for
// each operation, with porcupine for the linearizable core.
//
// # What is recorded
//
// A Recorder runs clients that issue random operations on a small set of
// ConfigMaps of one run (names lin-<run>-<i>, label
// linearizability.kubeproof.io/run=<run>, one data key "v" and a group
// label a/b), and watchers that record watch streams. Every value written
// is unique (client and sequence number), so a value seen anywhere
// identifies the write that produced it. Each operation is an Op (call and
// return time, input, outcome, returned object or list); each stream a
// Watch; both are plain data, written as JSON into reports. The end of a
// run cancels no request (each client finishes the operation it is in);
// then a final reader (client number Clients) makes a quorum get of every
// key and a quorum list, which mark the end of the history. A client whose
// operation had an ambiguous outcome pauses before its next one (10 ms,
// doubling up to 320 ms), so a server failing requests fast does not pile
// up ambiguous writes.
//
// Outcomes: a 409/404/410 answer is decisive (AlreadyExists, Conflict,
// NotFound, Expired); 429 and other 4xx are definite failures that changed
// nothing; timeouts, resets and 5xx are Ambiguous — the write may or may
// not have happened, possibly after the client gave up.
//
// # Guarantees checked, per operation (as Kubernetes documents them)
//
//   - create, update (with and without a resourceVersion precondition),
//     merge patch, delete (with and without a precondition), and get with
//     resourceVersion "" (a quorum read): linearizable. Each takes effect
//     at one point between call and return; a successful write gets a new,
//     unique resourceVersion, higher than every write that finished before
//     it started; a precondition fails with 409 Conflict exactly when the
//     object's resourceVersion differs; create fails with 409
//     AlreadyExists exactly when the object exists; 404 exactly when it
//     does not.
//   - list with resourceVersion "": linearizable, and one consistent
//     snapshot: its items are exactly the state of the key set at the
//     list's resourceVersion. With limit/continue, every page carries the
//     first page's resourceVersion and the pages together are that
//     snapshot.
//   - get/list with resourceVersion "0" ("any"): the data is some state
//     that existed — for a list, the exact state at its resourceVersion —
//     but it may be arbitrarily old and is not monotonic across requests.
//     Nothing more is promised, so nothing more is checked.
//   - get with resourceVersion R (for get this means "not older than R"):
//     the object returned is still current at some revision ≥ R.
//   - list with resourceVersionMatch=NotOlderThan and R: snapshot at its
//     resourceVersion, which is ≥ R. With resourceVersionMatch=Exact: the
//     snapshot at exactly R.
//   - 410 Expired (lists with Exact, watches from R): when the history says
//     the server reads straight from etcd (History.ExpiredExact), 410 comes
//     exactly when R is below a compaction the scenario made. A watch cache
//     may expire revisions it no longer holds, so with one only the events
//     are checked.
//
// Watch streams (each stream separately, against the merged history):
//
//   - ordered: event revisions strictly increase;
//   - unique: no revision twice;
//   - atomic: a revision's events are never split. Kubernetes writes change
//     one object per revision, so a revision has exactly one event and
//     atomicity is the same check as uniqueness;
//   - bookmarkable: no event at or below a bookmark's revision after it;
//   - reliable: between the stream's start and the last revision it
//     reported (event or bookmark), it delivers every change of the
//     timeline its selector lets through, with the right type and content;
//   - resumable: a watch from R delivers exactly the changes after R — the
//     first event is the first change after R (a missing change before
//     the first event is reported as "resumable");
//   - sendInitialEvents: the ADDED events before the bookmark annotated
//     k8s.io/initial-events-end are exactly the state (selector applied) at
//     the bookmark's revision, which is not older than any write that
//     finished before the watch started (resourceVersion "" = consistent);
//   - selector transitions: an object entering the selector is ADDED,
//     leaving it is DELETED (carrying its previous content at the
//     transition's revision), as upstream's watch does.
//
// # The model and why checking per key is sound
//
// The store is a map from names to objects plus one global revision
// counter; every write advances the counter (other clients of the server
// may advance it too, so revisions have gaps) and stamps the object with
// the new revision. With one global counter the history cannot simply be
// split by key: a read of x can be stale only relative to a write of y.
// The check is therefore split in two, and together the two parts are
// equivalent to checking the global model for the linearizable operations:
//
//  1. Per key (porcupine, partitioned by name): a non-deterministic model
//     of one object — exists, value, resourceVersion, and a floor every
//     later write must exceed — with CAS semantics and outcomes, where an
//     ambiguous write never returns and may or may not take effect (its
//     revision then stays unknown until some read reveals it). This checks
//     that each key's operations have a linearization in which its writes'
//     revisions increase. Before the search, ambiguous writes are resolved
//     where the history decides them: one whose value was observed took
//     effect before its first observation returned; a create, update or
//     patch nobody observed, while unfiltered watch streams reported every
//     revision from its call to the end of the history, did not take
//     effect, nor did a delete when no deletion it could have made was
//     reported after its call (ambiguous.go argues why none of this can
//     hide a violation). Only the rest — deletes that may have made a
//     reported deletion, writes during a gap in the watches — stay
//     pending, so the search does not grow exponentially with them.
//  2. Across keys (revision order): every linearizable operation must have
//     a revision ρ in a known range — a write exactly its resourceVersion;
//     a quorum get of version v any ρ from v's revision up to (excluding)
//     the next change of that key; a quorum list exactly its
//     resourceVersion — such that whenever A returned before B was called,
//     ρ(A) ≤ ρ(B), strictly if B is a write. This is a system of difference
//     constraints on a real-time interval order; it is solved exactly by
//     propagating the least feasible ρ in call order (lo(B) = max over all
//     A returned before B was called), which fails iff no assignment
//     exists.
//
// Why 1+2 implies global linearizability: sort all operations by ρ
// (writes before reads at the same revision, ties by real time). This
// order respects real time by 2. Restricted to key k it orders k's writes
// by revision, which by 1 is k's linearization order of writes, and puts
// each read of k between the write it observed and the next change of k,
// so every per-key step is legal; reads of other keys do not change state.
// Hence it is a legal sequential history of the global model. Conversely a
// globally linearizable history passes both (project it on k; take ρ =
// the global revision at each operation's point). Non-quorum reads, lists
// and watches are not linearizable by contract and are checked against
// the timeline of each key — all versions with their revisions, known
// from write responses and any observation, plus deletion revisions from
// DELETED events — instead.
//
// What is only approximated, always in the sound direction (never a false
// alarm; possibly a missed bug): a ConfigMap delete is answered with a
// success Status that carries no revision (Kubernetes returns the deleted
// object, stamped with the deletion's revision, only for kinds such as
// pods, services and service accounts), so a delete is placed by watch
// events when some stream saw it and otherwise only by porcupine; failed CAS operations (Conflict,
// NotFound, AlreadyExists) are checked per key only; an ambiguous write
// nobody ever observed is unknown to the timeline (and left out of the
// per-key search when the watch streams show it did not happen, which
// trusts the watch: if the server's watch lost such a write, the per-key
// search may report the loss as a linearizability violation).
//
// Revisions are assumed to be etcd revisions (integers, one per write),
// which holds for kube-apiserver and kubeproof; clients in general must
// treat resourceVersions as opaque.
package linearizability
