---------------------------- MODULE PodPipeline ----------------------------
(***************************************************************************)
(* The Kubernetes pod-creation pipeline, abstracted: a revisioned store    *)
(* with watches, the Deployment and ReplicaSet controllers, the garbage    *)
(* collector, the scheduler, the node lifecycle controller, one kubelet    *)
(* per node, and an environment of users and faults.                       *)
(*                                                                         *)
(* spec/README.md says what is modelled and what is abstracted away, and   *)
(* explains every property.  The Go package model/ is this module's        *)
(* executable twin: the same variables and actions under the same names;   *)
(* its checker (model/checker) explores the .cfg files of this directory.  *)
(***************************************************************************)
EXTENDS Integers, FiniteSets, Sequences

CONSTANTS
    NumNodes,        \* nodes 1..NumNodes, all alike
    NumDeployments,  \* deployments 1..NumDeployments
    Replicas,        \* spec.replicas a deployment is created with
    NumVersions,     \* pod template versions 1..NumVersions
    MaxSurge,        \* rolling update strategy, absolute numbers
    MaxUnavailable,
    PodsPerRS,       \* pod name slots per ReplicaSet
    Capacity,        \* pods a node holds (every pod requests one unit)
    IPsPerNode,      \* size of a node's pod IP pool
    MaxScales,       \* budgets: user scale operations,
    MaxDeletes,      \*   user deployment deletions,
    MaxCrashes,      \*   component crashes,
    MaxWatchDrops,   \*   dropped watches,
    MaxNodeFailures, \*   node failures,
    MaxEvictions,    \*   kubelet node-pressure evictions (all in total)
    \* Features beyond the core pipeline; 0 turns each off.
    TrackRevisions,  \* 1: the store keeps its global revision counter; events carry it
    MaxLag,          \* watch events a component may hold undelivered (0: none)
    JoiningNodes,    \* the last JoiningNodes nodes start unregistered and join
    MaxNodeDeletes,  \* budget: node deletions
    LabeledNodes,    \* nodes 1..LabeledNodes carry the label nodeSelectors ask for
    SelectorDeployments, \* deployments 1..SelectorDeployments have a nodeSelector
    ReadinessProbes, \* 1: containers have a readiness probe
    MaxProbeFailures, \* budget: readiness probe failures
    RestartPolicy,   \* of the pod template: 0 Always, 1 OnFailure, 2 Never
    MaxCompletions,  \* budget: containers that exit 0
    KubeletLag,      \* 1: each kubelet acts on its own lagging view of its pods
    DeploymentLag,   \* 1: the deployment controller counts availability from its own lagging view
    NodeLifecycleLag, \* 1: taint-based eviction reads its own lagging view of node taints
    NodesReturn,     \* 1: a deleted node may register again under its name
    GCLag            \* 1: the garbage collector's finalizer removal reads its own lagging graph of pods

Nodes       == 1..NumNodes
Deployments == 1..NumDeployments
Versions    == 1..NumVersions
Slots       == 1..PodsPerRS
IPs         == 1..IPsPerNode
\* A pod is named by its deployment, the template version of its
\* ReplicaSet, and a name slot (its generated name suffix).
Pods        == Deployments \X Versions \X Slots
\* The ReplicaSet of template version v of deployment d is <<d, v>>.
RSs         == Deployments \X Versions
\* Controllers with an informer cache fed by an event queue and with
\* expectations or assumed pods; they crash and lose their watch.  The
\* kubelets, the deployment controller and taint-based eviction act on
\* lagging views of their own (kubeletView, dcAvailable and dcDeployment, nlcTainted) when
\* KubeletLag, DeploymentLag, NodeLifecycleLag are 1.
Controllers == {"ReplicaSetController", "Scheduler"}

\* Nodes and deployments are numbered; labels and selectors by number.
NodeLabeled(n) == n <= LabeledNodes
Selects(d) == d <= SelectorDeployments
MatchesNode(p, n) == ~Selects(p[1]) \/ NodeLabeled(n)
Terminal(ph) == ph \in {"Failed", "Succeeded"}

Min(a, b) == IF a < b THEN a ELSE b
Max(a, b) == IF a > b THEN a ELSE b
RECURSIVE SumOver(_, _)
SumOver(f, S) == IF S = {} THEN 0
                 ELSE LET x == CHOOSE y \in S : TRUE IN f[x] + SumOver(f, S \ {x})

-----------------------------------------------------------------------------
(* Store: the API objects, as the API server keeps them in etcd.  Every    *)
(* write is a compare-and-swap on one object and gets the next revision    *)
(* (kept in revision when TrackRevisions = 1; STORE-1).                    *)

VARIABLES
    depState,    \* deployment d: "Absent", "Live", "Deleting" (foreground), "Gone"
    depReplicas, \* its spec.replicas
    depVersion,  \* its pod template version (0 while absent or gone)
    depObserved, \* status.observedGeneration = metadata.generation
    rsState,     \* ReplicaSet <<d, v>>: "Absent", "Live", "Deleting" (foreground)
    rsReplicas,  \* its spec.replicas
    podState,    \* pod p: "Absent", "Live", "Deleting" (deletionTimestamp set)
    podNode,     \* its spec.nodeName: 0 = unbound
    podPhase,    \* its status.phase: "Pending", "Running", "Failed", "Succeeded"
    podOwners,   \* versions of the ReplicaSets that are its controller owners
    podReady,    \* its Ready condition (the readiness probe passed, or there is none)
    nodeTainted, \* node n is NotReady with the NoExecute unreachable taint
    nodeState,   \* the Node object of n: "Absent" (not joined), "Live", "Gone" (deleted)
    revision     \* the revision of the latest write (0 throughout unless TrackRevisions)

objectVars == <<depState, depReplicas, depVersion, depObserved, rsState, rsReplicas,
                podState, podNode, podPhase, podOwners, podReady, nodeTainted, nodeState>>
storeVars == <<objectVars, revision>>

(* Node runtime (CRI and CNI): survives component crashes. *)
VARIABLES
    sandboxes,   \* live sandboxes (with the pod's containers) of pod p
    sandboxNode, \* node whose runtime holds them: 0 = none
    sandboxIP    \* the IP they hold, from that node's pool: 0 = none

runtimeVars == <<sandboxes, sandboxNode, sandboxIP>>

(* Component memory: lost when the component crashes. *)
VARIABLES
    kubeletKnows, \* the kubelet of sandboxNode[p] has p's sandbox in its pod manager
    rscView,      \* the ReplicaSet controller's cache: "Absent", "Inactive", "Active"
    rscExpect,    \* its expectations: "None", "Add", "Delete"
    schedView,    \* the scheduler's cache: 0 not cached, 1 unbound, 1 + n bound to n
    schedAssumed, \* node the scheduler assumed p onto, binding not yet observed: 0 = none
    kubeletView,  \* what the kubelet of p's node has seen of p (KubeletLag = 1):
                  \* <<"Live", n>>, <<"Deleting", n>>, or <<"Absent", 0>> (nothing)
    dcAvailable,  \* ReplicaSet <<d, v>>'s status.availableReplicas as the deployment
                  \* controller last saw it (DeploymentLag = 1)
    dcDeployment, \* deployment d as the deployment controller last saw it (DeploymentLag = 1):
                  \* [state |-> lifecycle, replicas |-> spec.replicas, version |-> template]
    nlcTainted,   \* taint-based eviction's view of node n's taint (NodeLifecycleLag = 1)
    gcGraph,      \* the garbage collector's dependency graph has pod p (GCLag = 1)
    pending,      \* controller c's informer queue: watch events received, not yet applied
                  \* (a sequence of [pod, view, rev], oldest first, at most MaxLag)
    cacheRev      \* the revision controller c's cache reflects

viewVars == <<kubeletView, dcAvailable, dcDeployment, nlcTainted, gcGraph>>
memoryVars == <<kubeletKnows, rscView, rscExpect, schedView, schedAssumed, viewVars, pending, cacheRev>>

(* Environment: which components, watches and nodes are up. *)
VARIABLES
    up,        \* controller c runs
    watchOK,   \* its pod watch is established: events reach its cache
    kubeletUp, \* the kubelet of node n runs
    nodeUp     \* node n is reachable

envVars == <<up, watchOK, kubeletUp, nodeUp>>

(* Budgets of faults and user operations used so far. *)
VARIABLES crashes, watchDrops, nodeFailures, evictions, scales, deletes,
          nodeDeletes, probeFailures, completions

budgetVars == <<crashes, watchDrops, nodeFailures, evictions, scales, deletes,
                nodeDeletes, probeFailures, completions>>

vars == <<storeVars, runtimeVars, memoryVars, envVars, budgetVars>>

-----------------------------------------------------------------------------
(* Derived quantities. *)

PodsOf(d, v) == {<<d, v, k>> : k \in Slots}

\* What each cache would show for pod p now, and after the step ('Next').
ProjRS(p) == IF podState[p] = "Absent" THEN "Absent"
             ELSE IF podState[p] = "Deleting" \/ Terminal(podPhase[p]) THEN "Inactive"
             ELSE "Active"
ProjRSNext(p) == IF podState'[p] = "Absent" THEN "Absent"
                 ELSE IF podState'[p] = "Deleting" \/ Terminal(podPhase'[p]) THEN "Inactive"
                 ELSE "Active"
ProjSched(p) == IF podState[p] = "Absent" \/ Terminal(podPhase[p]) THEN 0 ELSE 1 + podNode[p]
ProjSchedNext(p) == IF podState'[p] = "Absent" \/ Terminal(podPhase'[p]) THEN 0 ELSE 1 + podNode'[p]
Project(c, p) == IF c = "ReplicaSetController" THEN ProjRS(p) ELSE ProjSched(p)
ProjectNext(c, p) == IF c = "ReplicaSetController" THEN ProjRSNext(p) ELSE ProjSchedNext(p)
\* What the kubelet of p's node would see of p now; and what it acts on:
\* its lagging view with KubeletLag = 1, the pod as it is otherwise.
NothingSeen == <<"Absent", 0>>
ProjKubelet(p) == IF podState[p] = "Absent" \/ podNode[p] = 0 THEN NothingSeen
                  ELSE <<podState[p], podNode[p]>>
KubeletSees(p) == IF KubeletLag = 1 THEN kubeletView[p] ELSE ProjKubelet(p)
\* Whether taint-based eviction sees node n tainted.
NLCSeesTainted(n) == IF NodeLifecycleLag = 1 THEN nlcTainted[n] ELSE nodeTainted[n]
\* Whether the garbage collector's graph has pod p.
GCSees(p) == IF GCLag = 1 THEN gcGraph[p] ELSE podState[p] # "Absent"

ActivePods(d, v) == Cardinality({p \in PodsOf(d, v) : podState[p] = "Live" /\ ~Terminal(podPhase[p])})
\* Available: live, Running and Ready (minReadySeconds 0), now (LIVE-1) ...
IsAvailable(p) == podState[p] = "Live" /\ podPhase[p] = "Running" /\ podReady[p]
AvailablePodsNow(d, v) == Cardinality({p \in PodsOf(d, v) : IsAvailable(p)})
\* ... and as the deployment controller counts it (what it acts on and DEP-2
\* is stated over): status.availableReplicas as it last saw it, with
\* DeploymentLag = 1.
AvailablePods(d, v) == IF DeploymentLag = 1 THEN dcAvailable[<<d, v>>] ELSE AvailablePodsNow(d, v)
\* Deployment d as the store holds it, and as the deployment controller sees
\* it: its lagging view with DeploymentLag = 1, the object otherwise.
DepNow(d) == [state |-> depState[d], replicas |-> depReplicas[d], version |-> depVersion[d]]
DCSees(d) == IF DeploymentLag = 1 THEN dcDeployment[d] ELSE DepNow(d)
NoDeploymentSeen == [state |-> "Absent", replicas |-> 0, version |-> 0]
AvailableTotal(d) == SumOver([v \in Versions |-> AvailablePods(d, v)], Versions)
TotalReplicas(d) == SumOver([v \in Versions |-> IF rsState[<<d, v>>] = "Live" THEN rsReplicas[<<d, v>>] ELSE 0], Versions)

\* Pods the ReplicaSet controller believes <<d, v>> has: cached active pods
\* not expected to be deleted, plus creations not yet observed.
Believed(d, v) == Cardinality({p \in PodsOf(d, v) :
                      (rscView[p] = "Active" /\ rscExpect[p] # "Delete") \/ rscExpect[p] = "Add"})

\* Pod p has controller owners and none of them is live.
OwnersGone(p) == podOwners[p] # {} /\ \A v \in podOwners[p] : rsState[<<p[1], v>>] # "Live"

\* A name slot is reused only when nothing anywhere refers to its last pod.
SlotFree(p) == /\ podState[p] = "Absent" /\ sandboxes[p] = 0 /\ sandboxNode[p] = 0 /\ sandboxIP[p] = 0
               /\ ~kubeletKnows[p] /\ rscView[p] = "Absent" /\ rscExpect[p] = "None"
               /\ schedView[p] = 0 /\ schedAssumed[p] = 0 /\ kubeletView[p] = NothingSeen /\ ~gcGraph[p]
               /\ \A c \in Controllers, i \in 1..Len(pending[c]) : pending[c][i].pod # p

\* Pods the scheduler counts on node n: cached there, or assumed there.
SchedulerCount(n) == Cardinality({p \in Pods : schedView[p] = 1 + n \/ schedAssumed[p] = n})
\* Non-terminal pods with a sandbox on n (what kubelet admission counts).
Admitted(n) == Cardinality({p \in Pods : sandboxes[p] > 0 /\ sandboxNode[p] = n
                                         /\ podState[p] # "Absent" /\ ~Terminal(podPhase[p])})
FreeIPs(n) == IPs \ {sandboxIP[p] : p \in {q \in Pods : sandboxNode[q] = n /\ sandboxIP[q] # 0}}
LowestFreeIP(n) == CHOOSE ip \in FreeIPs(n) : \A j \in FreeIPs(n) : ip <= j
\* Non-terminal pods bound to node n.
BoundPods(n) == Cardinality({p \in Pods : podState[p] # "Absent" /\ podNode[p] = n /\ ~Terminal(podPhase[p])})

-----------------------------------------------------------------------------
(* Effects shared by actions. *)

\* Watch delivery.  A write of pod p sends a watch event, carrying the
\* write's revision and what the component's cache will show for p, to every
\* running component whose watch is established (an event that changes
\* nothing it caches is filtered).  With MaxLag = 0 the event is applied at
\* once; otherwise it joins the component's queue, and a full queue first
\* applies its oldest event, so a cache lags by at most MaxLag events, at
\* any time.  DeliverWatchEvent(c) applies queued events.
\*
\* A component's memory is handled as a record: its cache (view), its
\* expectations or assumed pods (aux), the revision its cache reflects (rev).

\* Applying event e: the ReplicaSet controller observes an expected creation
\* when the pod shows up, an expected deletion when it shows terminating or
\* gone; the scheduler confirms an assumed pod seen bound there (or gone).
ApplyEvent(c, mem, e) ==
    LET p == e.pod IN
    [view |-> [mem.view EXCEPT ![p] = e.view],
     aux  |-> IF c = "ReplicaSetController"
                THEN IF \/ mem.aux[p] = "Add" /\ e.view # "Absent"
                        \/ mem.aux[p] = "Delete" /\ e.view # "Active"
                     THEN [mem.aux EXCEPT ![p] = "None"] ELSE mem.aux
                ELSE IF mem.aux[p] # 0 /\ (e.view = 1 + mem.aux[p] \/ e.view = 0)
                     THEN [mem.aux EXCEPT ![p] = 0] ELSE mem.aux,
     rev  |-> e.rev]

\* What a cache shows for p once queue q is applied.
Replayed(mem, q, p) ==
    IF \E i \in 1..Len(q) : q[i].pod = p
    THEN q[CHOOSE i \in 1..Len(q) : q[i].pod = p /\ \A j \in 1..Len(q) : q[j].pod = p => j <= i].view
    ELSE mem.view[p]

\* Component c, with memory mem and queue q, receives event e.
Receive(c, mem, q, e) ==
    IF e.view = Replayed(mem, q, e.pod) THEN [mem |-> mem, q |-> q]
    ELSE IF MaxLag = 0 THEN [mem |-> ApplyEvent(c, mem, e), q |-> q]
    ELSE IF Len(q) = MaxLag THEN [mem |-> ApplyEvent(c, mem, Head(q)), q |-> Append(Tail(q), e)]
    ELSE [mem |-> mem, q |-> Append(q, e)]

PodRecord(p) == <<podState[p], podNode[p], podPhase[p], podOwners[p], podReady[p]>>
PodRecordNext(p) == <<podState'[p], podNode'[p], podPhase'[p], podOwners'[p], podReady'[p]>>

\* The caches after a write (the store variables are primed before this
\* conjunct).  newExpect/newAssumed are the expectations/assumptions the
\* action leaves before delivery.  A write writes at most one pod.
Deliver(newExpect, newAssumed) ==
    LET changed == {p \in Pods : PodRecordNext(p) # PodRecord(p)}
        memOf(c) == IF c = "ReplicaSetController"
                      THEN [view |-> rscView, aux |-> newExpect, rev |-> cacheRev[c]]
                      ELSE [view |-> schedView, aux |-> newAssumed, rev |-> cacheRev[c]]
        after(c) == IF changed = {} \/ ~(up[c] /\ watchOK[c])
                      THEN [mem |-> memOf(c), q |-> pending[c]]
                      ELSE LET p == CHOOSE x \in changed : TRUE IN
                           Receive(c, memOf(c), pending[c], [pod |-> p, view |-> ProjectNext(c, p), rev |-> revision'])
        rs == after("ReplicaSetController")
        sc == after("Scheduler") IN
    /\ rscView' = rs.mem.view /\ rscExpect' = rs.mem.aux
    /\ schedView' = sc.mem.view /\ schedAssumed' = sc.mem.aux
    /\ pending' = [c \in Controllers |-> IF c = "ReplicaSetController" THEN rs.q ELSE sc.q]
    /\ cacheRev' = [c \in Controllers |-> IF c = "ReplicaSetController" THEN rs.mem.rev ELSE sc.mem.rev]

\* A write: it gets the next revision; caches follow.
Write(newExpect, newAssumed) ==
    /\ revision' = IF TrackRevisions = 1 THEN revision + 1 ELSE revision
    /\ Deliver(newExpect, newAssumed)
    /\ UNCHANGED <<runtimeVars, kubeletKnows, viewVars, envVars>>

\* The kubelet stops p: its containers and sandbox stopped, its IP released,
\* its sandbox out of the pod manager.
StopSandbox(p) ==
    /\ sandboxes' = [sandboxes EXCEPT ![p] = 0]
    /\ sandboxNode' = [sandboxNode EXCEPT ![p] = 0]
    /\ sandboxIP' = [sandboxIP EXCEPT ![p] = 0]
    /\ kubeletKnows' = [kubeletKnows EXCEPT ![p] = FALSE]

\* The kubelet's write of p's terminal phase (KUBELET-8): its status manager
\* holds the phase back until the termination of p completed (every
\* container and the sandbox stopped), so the stop and the write are one
\* step here.  (Upstream: mergePodStatus with the pod worker's
\* CouldHaveRunningContainers.)
WriteTerminal(p, newExpect, newAssumed) ==
    /\ revision' = IF TrackRevisions = 1 THEN revision + 1 ELSE revision
    /\ Deliver(newExpect, newAssumed)
    /\ StopSandbox(p)
    /\ UNCHANGED <<viewVars, envVars>>

RemovePod(p) ==
    /\ podState' = [podState EXCEPT ![p] = "Absent"]
    /\ podNode' = [podNode EXCEPT ![p] = 0]
    /\ podPhase' = [podPhase EXCEPT ![p] = "Pending"]
    /\ podOwners' = [podOwners EXCEPT ![p] = {}]
    /\ podReady' = [podReady EXCEPT ![p] = FALSE]

\* Graceful deletion: an unscheduled pod goes at once; a scheduled one
\* becomes Deleting until its kubelet has stopped it.
DeletePod(p) ==
    IF podNode[p] = 0 THEN RemovePod(p)
    ELSE /\ podState' = [podState EXCEPT ![p] = "Deleting"]
         /\ UNCHANGED <<podNode, podPhase, podOwners, podReady>>

RemoveDeployment(d) ==
    /\ depState' = [depState EXCEPT ![d] = "Gone"]
    /\ depReplicas' = [depReplicas EXCEPT ![d] = 0]
    /\ depVersion' = [depVersion EXCEPT ![d] = 0]
    /\ depObserved' = [depObserved EXCEPT ![d] = FALSE]

\* Controller c's cache is replaced by a consistent list of the store (at
\* the current revision); its queue is dropped.
Relisted(c) ==
    /\ watchOK' = [watchOK EXCEPT ![c] = TRUE]
    /\ pending' = [pending EXCEPT ![c] = <<>>]
    /\ cacheRev' = [cacheRev EXCEPT ![c] = revision]
    /\ IF c = "ReplicaSetController"
         THEN /\ rscView' = [p \in Pods |-> ProjRS(p)]
              /\ rscExpect' = [p \in Pods |-> "None"]
              /\ UNCHANGED <<schedView, schedAssumed>>
         ELSE /\ schedView' = [p \in Pods |-> ProjSched(p)]
              /\ schedAssumed' = [p \in Pods |-> 0]
              /\ UNCHANGED <<rscView, rscExpect>>

-----------------------------------------------------------------------------
(* Environment: users. *)

\* A user creates deployment d (once).
CreateDeployment(d) ==
    /\ depState[d] = "Absent"
    /\ depState' = [depState EXCEPT ![d] = "Live"]
    /\ depReplicas' = [depReplicas EXCEPT ![d] = Replicas]
    /\ depVersion' = [depVersion EXCEPT ![d] = 1]
    /\ depObserved' = [depObserved EXCEPT ![d] = FALSE]
    /\ UNCHANGED <<rsState, rsReplicas, podState, podNode, podPhase, podOwners, podReady, nodeTainted, nodeState>>
    /\ Write(rscExpect, schedAssumed)
    /\ UNCHANGED budgetVars

\* A user changes the pod template: a rolling update.
UpdateDeployment(d) ==
    /\ depState[d] = "Live" /\ depVersion[d] < NumVersions
    /\ depVersion' = [depVersion EXCEPT ![d] = @ + 1]
    /\ depObserved' = [depObserved EXCEPT ![d] = FALSE]
    /\ UNCHANGED <<depState, depReplicas, rsState, rsReplicas, podState, podNode, podPhase, podOwners, podReady, nodeTainted, nodeState>>
    /\ Write(rscExpect, schedAssumed)
    /\ UNCHANGED budgetVars

\* A user sets spec.replicas to r.
ScaleDeployment(d, r) ==
    /\ depState[d] = "Live" /\ scales < MaxScales /\ depReplicas[d] # r
    /\ depReplicas' = [depReplicas EXCEPT ![d] = r]
    /\ depObserved' = [depObserved EXCEPT ![d] = FALSE]
    /\ scales' = scales + 1
    /\ UNCHANGED <<depState, depVersion, rsState, rsReplicas, podState, podNode, podPhase, podOwners, podReady, nodeTainted, nodeState>>
    /\ Write(rscExpect, schedAssumed)
    /\ UNCHANGED <<crashes, watchDrops, nodeFailures, evictions, deletes, nodeDeletes, probeFailures, completions>>

\* A user deletes deployment d with propagation policy Background (it goes
\* at once; the garbage collector deletes its dependents) or Foreground (it
\* stays, with the foregroundDeletion finalizer, until they are gone).
DeleteDeployment(d, policy) ==
    /\ depState[d] = "Live" /\ deletes < MaxDeletes
    /\ IF policy = "Foreground"
         THEN \* setting the deletionTimestamp of an object with finalizers
              \* bumps its generation: not observed yet
              /\ depState' = [depState EXCEPT ![d] = "Deleting"]
              /\ depObserved' = [depObserved EXCEPT ![d] = FALSE]
              /\ UNCHANGED <<depReplicas, depVersion>>
         ELSE RemoveDeployment(d)
    /\ deletes' = deletes + 1
    /\ UNCHANGED <<rsState, rsReplicas, podState, podNode, podPhase, podOwners, podReady, nodeTainted, nodeState>>
    /\ Write(rscExpect, schedAssumed)
    /\ UNCHANGED <<crashes, watchDrops, nodeFailures, evictions, scales, nodeDeletes, probeFailures, completions>>

-----------------------------------------------------------------------------
(* Deployment controller: reads each deployment through DCSees (its      *)
(* lagging view with DeploymentLag = 1) and the ReplicaSets current (its   *)
(* writes to them are compare-and-swaps).                                  *)

\* How many more replicas d's ReplicaSets may have in total, for replicas r.
SurgeRoom(d, r) == Max(0, r + MaxSurge - TotalReplicas(d))

\* It sees d live and no ReplicaSet of its template: create that ReplicaSet,
\* as large as maxSurge allows.
DeploymentCreateReplicaSet(d) ==
    LET dep == DCSees(d)
        cur == dep.version IN
    /\ dep.state = "Live" /\ rsState[<<d, cur>>] = "Absent"
    /\ rsState' = [rsState EXCEPT ![<<d, cur>>] = "Live"]
    /\ rsReplicas' = [rsReplicas EXCEPT ![<<d, cur>>] = Min(dep.replicas, SurgeRoom(d, dep.replicas))]
    /\ UNCHANGED <<depState, depReplicas, depVersion, depObserved, podState, podNode, podPhase, podOwners, podReady, nodeTainted, nodeState>>
    /\ Write(rscExpect, schedAssumed)
    /\ UNCHANGED budgetVars

\* Scale the ReplicaSet of the template it sees up toward replicas, within
\* replicas + maxSurge.
DeploymentScaleUp(d) ==
    LET dep == DCSees(d)
        cur == dep.version
        target == Min(dep.replicas, rsReplicas[<<d, cur>>] + SurgeRoom(d, dep.replicas)) IN
    /\ dep.state = "Live" /\ rsState[<<d, cur>>] = "Live"
    /\ target > rsReplicas[<<d, cur>>]
    /\ rsReplicas' = [rsReplicas EXCEPT ![<<d, cur>>] = target]
    /\ UNCHANGED <<depState, depReplicas, depVersion, depObserved, rsState, podState, podNode, podPhase, podOwners, podReady, nodeTainted, nodeState>>
    /\ Write(rscExpect, schedAssumed)
    /\ UNCHANGED budgetVars

\* The current ReplicaSet goes down to replicas; an old one drops its
\* unavailable pods and as many available ones as keep
\* replicas - maxUnavailable pods of the deployment available (d as the
\* controller sees it).
ScaleDownTarget(d, v) ==
    LET dep == DCSees(d)
        spec == rsReplicas[<<d, v>>]
        excess == AvailableTotal(d) - (dep.replicas - MaxUnavailable) IN
    IF v = dep.version THEN Min(spec, dep.replicas)
    ELSE Min(spec, Max(0, AvailablePods(d, v) - Max(0, excess)))

DeploymentScaleDown(d, v) ==
    /\ DCSees(d).state = "Live" /\ rsState[<<d, v>>] = "Live"
    /\ ScaleDownTarget(d, v) < rsReplicas[<<d, v>>]
    /\ rsReplicas' = [rsReplicas EXCEPT ![<<d, v>>] = ScaleDownTarget(d, v)]
    /\ UNCHANGED <<depState, depReplicas, depVersion, depObserved, rsState, podState, podNode, podPhase, podOwners, podReady, nodeTainted, nodeState>>
    /\ Write(rscExpect, schedAssumed)
    /\ UNCHANGED budgetVars

\* Write status.observedGeneration.  The status write carries the
\* resourceVersion of the object the controller read, so it succeeds only
\* when its view is current.  A live deployment is observed once its
\* ReplicaSets are within replicas + maxSurge; one being deleted gets only
\* its status synced, whatever its ReplicaSets hold.
DeploymentObserve(d) ==
    LET dep == DCSees(d) IN
    /\ ~depObserved[d] /\ dep = DepNow(d)
    /\ \/ dep.state = "Live" /\ TotalReplicas(d) <= dep.replicas + MaxSurge
       \/ dep.state = "Deleting"
    /\ depObserved' = [depObserved EXCEPT ![d] = TRUE]
    /\ UNCHANGED <<depState, depReplicas, depVersion, rsState, rsReplicas, podState, podNode, podPhase, podOwners, podReady, nodeTainted, nodeState>>
    /\ Write(rscExpect, schedAssumed)
    /\ UNCHANGED budgetVars

-----------------------------------------------------------------------------
(* ReplicaSet controller: acts on its cache and its expectations. *)

\* It believes <<d, v>> has too few pods: create one under the lowest free
\* name slot, and expect to observe it.
ReplicaSetCreatePod(d, v) ==
    /\ up["ReplicaSetController"] /\ rsState[<<d, v>>] = "Live"
    /\ Believed(d, v) < rsReplicas[<<d, v>>]
    /\ \E k \in Slots : SlotFree(<<d, v, k>>)
    /\ LET k == CHOOSE i \in Slots : SlotFree(<<d, v, i>>) /\ \A j \in Slots : SlotFree(<<d, v, j>>) => i <= j
           p == <<d, v, k>> IN
       /\ podState' = [podState EXCEPT ![p] = "Live"]
       /\ podNode' = [podNode EXCEPT ![p] = 0]
       /\ podPhase' = [podPhase EXCEPT ![p] = "Pending"]
       /\ podOwners' = [podOwners EXCEPT ![p] = {v}]
       /\ UNCHANGED <<depState, depReplicas, depVersion, depObserved, rsState, rsReplicas, podReady, nodeTainted, nodeState>>
       /\ Write([rscExpect EXCEPT ![p] = "Add"], schedAssumed)
    /\ UNCHANGED budgetVars

\* It believes p's ReplicaSet has too many pods: delete p, one of its cached
\* active pods, and expect to observe that.
ReplicaSetDeletePod(p) ==
    LET d == p[1]  v == p[2] IN
    /\ up["ReplicaSetController"] /\ rsState[<<d, v>>] = "Live"
    /\ Believed(d, v) > rsReplicas[<<d, v>>]
    /\ rscView[p] = "Active" /\ rscExpect[p] = "None"
    /\ podState[p] = "Live"
    /\ DeletePod(p)
    /\ UNCHANGED <<depState, depReplicas, depVersion, depObserved, rsState, rsReplicas, nodeTainted, nodeState>>
    /\ Write([rscExpect EXCEPT ![p] = "Delete"], schedAssumed)
    /\ UNCHANGED budgetVars

-----------------------------------------------------------------------------
(* Garbage collector. *)

\* The owner of <<d, v>> is gone, or being deleted in the foreground:
\* delete the ReplicaSet in the background, or in the foreground.
GCDeleteReplicaSet(d, v) ==
    /\ rsState[<<d, v>>] = "Live" /\ depState[d] \in {"Deleting", "Gone"}
    /\ IF depState[d] = "Deleting"
         THEN /\ rsState' = [rsState EXCEPT ![<<d, v>>] = "Deleting"]
              /\ UNCHANGED rsReplicas
         ELSE /\ rsState' = [rsState EXCEPT ![<<d, v>>] = "Absent"]
              /\ rsReplicas' = [rsReplicas EXCEPT ![<<d, v>>] = 0]
    /\ UNCHANGED <<depState, depReplicas, depVersion, depObserved, podState, podNode, podPhase, podOwners, podReady, nodeTainted, nodeState>>
    /\ Write(rscExpect, schedAssumed)
    /\ UNCHANGED budgetVars

\* Every controller owner of p is gone or being deleted: delete p.
GCDeletePod(p) ==
    /\ podState[p] = "Live" /\ OwnersGone(p)
    /\ DeletePod(p)
    /\ UNCHANGED <<depState, depReplicas, depVersion, depObserved, rsState, rsReplicas, nodeTainted, nodeState>>
    /\ Write(rscExpect, schedAssumed)
    /\ UNCHANGED budgetVars

\* <<d, v>> is being deleted in the foreground and no pod of it (they all
\* have blockOwnerDeletion) remains: remove the finalizer; it goes.
GCRemoveReplicaSet(d, v) ==
    /\ rsState[<<d, v>>] = "Deleting"
    /\ \A k \in Slots : ~GCSees(<<d, v, k>>)
    /\ rsState' = [rsState EXCEPT ![<<d, v>>] = "Absent"]
    /\ rsReplicas' = [rsReplicas EXCEPT ![<<d, v>>] = 0]
    /\ UNCHANGED <<depState, depReplicas, depVersion, depObserved, podState, podNode, podPhase, podOwners, podReady, nodeTainted, nodeState>>
    /\ Write(rscExpect, schedAssumed)
    /\ UNCHANGED budgetVars

\* d is being deleted in the foreground and none of its ReplicaSets remain.
GCRemoveDeployment(d) ==
    /\ depState[d] = "Deleting"
    /\ \A v \in Versions : rsState[<<d, v>>] = "Absent"
    /\ RemoveDeployment(d)
    /\ UNCHANGED <<rsState, rsReplicas, podState, podNode, podPhase, podOwners, podReady, nodeTainted, nodeState>>
    /\ Write(rscExpect, schedAssumed)
    /\ UNCHANGED budgetVars

-----------------------------------------------------------------------------
(* Scheduler: acts on its cache and its assumed pods. *)

\* Its cache shows p pending and not assumed; n is registered, untainted,
\* matches p's nodeSelector and has room counting assumed pods.  The binding
\* is a compare-and-swap on p (still unbound, live, not terminal); p is
\* assumed onto n until observed bound.
SchedulerBindPod(p, n) ==
    /\ up["Scheduler"] /\ schedAssumed[p] = 0 /\ schedView[p] = 1
    /\ podState[p] = "Live" /\ podNode[p] = 0 /\ ~Terminal(podPhase[p])
    /\ nodeState[n] = "Live" /\ ~nodeTainted[n] /\ MatchesNode(p, n)
    /\ SchedulerCount(n) < Capacity
    /\ podNode' = [podNode EXCEPT ![p] = n]
    /\ UNCHANGED <<depState, depReplicas, depVersion, depObserved, rsState, rsReplicas, podState, podPhase, podOwners, podReady, nodeTainted, nodeState>>
    /\ Write(rscExpect, [schedAssumed EXCEPT ![p] = n])
    /\ UNCHANGED budgetVars

-----------------------------------------------------------------------------
(* Node lifecycle controller. *)

\* Node n stopped reporting: NotReady and the NoExecute unreachable taint.
NodeLifecycleTaintNode(n) ==
    /\ nodeState[n] = "Live" /\ ~nodeUp[n] /\ ~nodeTainted[n]
    /\ nodeTainted' = [nodeTainted EXCEPT ![n] = TRUE]
    /\ UNCHANGED <<depState, depReplicas, depVersion, depObserved, rsState, rsReplicas, podState, podNode, podPhase, podOwners, podReady, nodeState>>
    /\ Write(rscExpect, schedAssumed)
    /\ UNCHANGED budgetVars

\* Node n reports Ready again: remove the taint.
NodeLifecycleUntaintNode(n) ==
    /\ nodeUp[n] /\ nodeTainted[n]
    /\ nodeTainted' = [nodeTainted EXCEPT ![n] = FALSE]
    /\ UNCHANGED <<depState, depReplicas, depVersion, depObserved, rsState, rsReplicas, podState, podNode, podPhase, podOwners, podReady, nodeState>>
    /\ Write(rscExpect, schedAssumed)
    /\ UNCHANGED budgetVars

\* p is bound to a tainted node it does not tolerate: delete it.
NodeLifecycleEvictPod(p) ==
    /\ podState[p] = "Live" /\ podNode[p] # 0 /\ NLCSeesTainted(podNode[p])
    /\ podState' = [podState EXCEPT ![p] = "Deleting"]
    /\ UNCHANGED <<depState, depReplicas, depVersion, depObserved, rsState, rsReplicas, podNode, podPhase, podOwners, podReady, nodeTainted, nodeState>>
    /\ Write(rscExpect, schedAssumed)
    /\ UNCHANGED budgetVars

-----------------------------------------------------------------------------
(* Kubelet of node n: reads the pods bound to n (through its view,         *)
(* KubeletSees), its own status manager (phases it wrote) and its runtime. *)

KubeletReady(n) == nodeUp[n] /\ kubeletUp[n]

KubeletAdmissible(n, p) ==
    /\ KubeletReady(n) /\ KubeletSees(p) = <<"Live", n>>
    \* Running with no sandbox anywhere: a pod of a node that was deleted and came back
    /\ (podPhase[p] = "Pending" \/ (podPhase[p] = "Running" /\ sandboxes[p] = 0))
    /\ ~kubeletKnows[p] /\ (sandboxes[p] = 0 \/ sandboxNode[p] = n)

\* Admit p (it fits among the admitted pods), run its sandbox with the
\* lowest free IP of n's pool, and start its containers.
KubeletStartPod(n, p) ==
    /\ KubeletAdmissible(n, p) /\ Admitted(n) < Capacity /\ MatchesNode(p, n) /\ FreeIPs(n) # {}
    /\ sandboxes' = [sandboxes EXCEPT ![p] = @ + 1]
    /\ sandboxNode' = [sandboxNode EXCEPT ![p] = n]
    /\ sandboxIP' = [sandboxIP EXCEPT ![p] = LowestFreeIP(n)]
    /\ kubeletKnows' = [kubeletKnows EXCEPT ![p] = TRUE]
    /\ UNCHANGED <<storeVars, rscView, rscExpect, schedView, schedAssumed, viewVars, pending, cacheRev, envVars, budgetVars>>

\* Admission fails (the node is full, or its labels do not match p's
\* nodeSelector: reason NodeAffinity): p is Failed.
KubeletRejectPod(n, p) ==
    /\ KubeletAdmissible(n, p) /\ podState[p] # "Absent" /\ podNode[p] = n
    /\ (Admitted(n) >= Capacity \/ ~MatchesNode(p, n))
    /\ podPhase' = [podPhase EXCEPT ![p] = "Failed"]
    /\ UNCHANGED <<depState, depReplicas, depVersion, depObserved, rsState, rsReplicas, podState, podNode, podOwners, podReady, nodeTainted, nodeState>>
    /\ Write(rscExpect, schedAssumed)
    /\ UNCHANGED budgetVars

\* Report p Running; Ready too when its containers have no readiness probe.
KubeletUpdatePodStatus(n, p) ==
    /\ KubeletReady(n) /\ sandboxes[p] > 0 /\ sandboxNode[p] = n
    /\ podState[p] = "Live" /\ podPhase[p] = "Pending"
    /\ podPhase' = [podPhase EXCEPT ![p] = "Running"]
    /\ podReady' = [podReady EXCEPT ![p] = (ReadinessProbes = 0)]
    /\ UNCHANGED <<depState, depReplicas, depVersion, depObserved, rsState, rsReplicas, podState, podNode, podOwners, nodeTainted, nodeState>>
    /\ Write(rscExpect, schedAssumed)
    /\ UNCHANGED budgetVars

\* The kubelet sees p terminating, gone or not bound here, or p is
\* terminal: stop its containers, remove its sandbox, release its IP.
KubeletStopPod(n, p) ==
    /\ KubeletReady(n) /\ sandboxes[p] > 0 /\ sandboxNode[p] = n
    /\ ~(KubeletSees(p) = <<"Live", n>> /\ ~Terminal(podPhase[p]))
    /\ StopSandbox(p)
    /\ UNCHANGED <<storeVars, rscView, rscExpect, schedView, schedAssumed, viewVars, pending, cacheRev, envVars, budgetVars>>

\* The kubelet sees p terminating on n and nothing of it runs: delete the
\* object for good (with a UID precondition: still terminating on n).
KubeletFinalizePod(n, p) ==
    /\ KubeletReady(n) /\ KubeletSees(p) = <<"Deleting", n>>
    /\ podState[p] = "Deleting" /\ podNode[p] = n /\ sandboxes[p] = 0
    /\ RemovePod(p)
    /\ UNCHANGED <<depState, depReplicas, depVersion, depObserved, rsState, rsReplicas, nodeTainted, nodeState>>
    /\ Write(rscExpect, schedAssumed)
    /\ UNCHANGED budgetVars

\* Fault: node-pressure eviction of running pod p: the kubelet kills it and,
\* its sandbox stopped, reports it Failed (WriteTerminal).
KubeletEvictPod(n, p) ==
    /\ KubeletReady(n) /\ evictions < MaxEvictions
    /\ podNode[p] = n /\ podState[p] = "Live" /\ podPhase[p] = "Running"
    /\ podPhase' = [podPhase EXCEPT ![p] = "Failed"]
    /\ podReady' = [podReady EXCEPT ![p] = FALSE]
    /\ evictions' = evictions + 1
    /\ UNCHANGED <<depState, depReplicas, depVersion, depObserved, rsState, rsReplicas, podState, podNode, podOwners, nodeTainted, nodeState>>
    /\ WriteTerminal(p, rscExpect, schedAssumed)
    /\ UNCHANGED <<crashes, watchDrops, nodeFailures, scales, deletes, nodeDeletes, probeFailures, completions>>

-----------------------------------------------------------------------------
(* Faults and recovery. *)

\* Controller c crashes and loses its cache and expectations/assumptions.
ControllerCrash(c) ==
    /\ up[c] /\ crashes < MaxCrashes
    /\ up' = [up EXCEPT ![c] = FALSE]
    /\ watchOK' = [watchOK EXCEPT ![c] = TRUE]  \* meaningless while down
    /\ crashes' = crashes + 1
    /\ pending' = [pending EXCEPT ![c] = <<>>]
    /\ cacheRev' = [cacheRev EXCEPT ![c] = 0]
    /\ IF c = "ReplicaSetController"
         THEN /\ rscView' = [p \in Pods |-> "Absent"]
              /\ rscExpect' = [p \in Pods |-> "None"]
              /\ UNCHANGED <<schedView, schedAssumed>>
         ELSE /\ schedView' = [p \in Pods |-> 0]
              /\ schedAssumed' = [p \in Pods |-> 0]
              /\ UNCHANGED <<rscView, rscExpect>>
    /\ UNCHANGED <<storeVars, runtimeVars, kubeletKnows, viewVars, kubeletUp, nodeUp,
                   watchDrops, nodeFailures, evictions, scales, deletes, nodeDeletes, probeFailures, completions>>

\* Controller c starts again: it lists and watches.
ControllerRestart(c) ==
    /\ ~up[c]
    /\ up' = [up EXCEPT ![c] = TRUE]
    /\ Relisted(c)
    /\ UNCHANGED <<storeVars, runtimeVars, kubeletKnows, viewVars, kubeletUp, nodeUp, budgetVars>>

\* The pod watch of controller c breaks: its cache stops following.
WatchDrop(c) ==
    /\ up[c] /\ watchOK[c] /\ watchDrops < MaxWatchDrops
    /\ watchOK' = [watchOK EXCEPT ![c] = FALSE]
    /\ watchDrops' = watchDrops + 1
    /\ UNCHANGED <<storeVars, runtimeVars, memoryVars, up, kubeletUp, nodeUp,
                   crashes, nodeFailures, evictions, scales, deletes, nodeDeletes, probeFailures, completions>>

\* Controller c lists again (its resume revision may have been compacted).
Relist(c) ==
    /\ up[c] /\ ~watchOK[c]
    /\ Relisted(c)
    /\ UNCHANGED <<storeVars, runtimeVars, kubeletKnows, viewVars, up, kubeletUp, nodeUp, budgetVars>>

\* The kubelet of n crashes: its pod manager and its view are lost, the
\* runtime stays.
KubeletCrash(n) ==
    /\ kubeletUp[n] /\ crashes < MaxCrashes
    /\ kubeletUp' = [kubeletUp EXCEPT ![n] = FALSE]
    /\ kubeletKnows' = [p \in Pods |-> IF sandboxNode[p] = n THEN FALSE ELSE kubeletKnows[p]]
    /\ kubeletView' = [p \in Pods |-> IF kubeletView[p][2] = n THEN NothingSeen ELSE kubeletView[p]]
    /\ crashes' = crashes + 1
    /\ UNCHANGED <<storeVars, runtimeVars, rscView, rscExpect, schedView, schedAssumed, dcAvailable, dcDeployment, nlcTainted, gcGraph, pending, cacheRev, up, watchOK, nodeUp,
                   watchDrops, nodeFailures, evictions, scales, deletes, nodeDeletes, probeFailures, completions>>

\* The kubelet of n starts again, rebuilds its pod manager from the runtime
\* and lists the pods bound to n.
KubeletRestart(n) ==
    /\ ~kubeletUp[n] /\ nodeState[n] = "Live"
    /\ kubeletUp' = [kubeletUp EXCEPT ![n] = TRUE]
    /\ kubeletKnows' = [p \in Pods |-> IF sandboxNode[p] = n /\ sandboxes[p] > 0 THEN TRUE ELSE kubeletKnows[p]]
    /\ kubeletView' = [p \in Pods |-> IF KubeletLag = 1 /\ podNode[p] = n THEN ProjKubelet(p) ELSE kubeletView[p]]
    /\ UNCHANGED <<storeVars, runtimeVars, rscView, rscExpect, schedView, schedAssumed, dcAvailable, dcDeployment, nlcTainted, gcGraph, pending, cacheRev, up, watchOK, nodeUp, budgetVars>>

\* Node n becomes unreachable (its runtime is frozen).
NodeFail(n) ==
    /\ nodeUp[n] /\ nodeFailures < MaxNodeFailures
    /\ nodeUp' = [nodeUp EXCEPT ![n] = FALSE]
    /\ nodeFailures' = nodeFailures + 1
    /\ UNCHANGED <<storeVars, runtimeVars, memoryVars, up, watchOK, kubeletUp,
                   crashes, watchDrops, evictions, scales, deletes, nodeDeletes, probeFailures, completions>>

\* Node n is reachable again.
NodeRecover(n) ==
    /\ ~nodeUp[n] /\ nodeState[n] = "Live"
    /\ nodeUp' = [nodeUp EXCEPT ![n] = TRUE]
    /\ UNCHANGED <<storeVars, runtimeVars, memoryVars, up, watchOK, kubeletUp, budgetVars>>

-----------------------------------------------------------------------------
(* Informers, nodes joining and leaving, the pod garbage collector,        *)
(* readiness and completion.                                                *)

\* The oldest event in controller c's queue reaches its cache.
DeliverWatchEvent(c) ==
    LET mem == IF c = "ReplicaSetController"
                 THEN [view |-> rscView, aux |-> rscExpect, rev |-> cacheRev[c]]
                 ELSE [view |-> schedView, aux |-> schedAssumed, rev |-> cacheRev[c]]
        new == ApplyEvent(c, mem, Head(pending[c])) IN
    /\ up[c] /\ pending[c] # <<>>
    /\ pending' = [pending EXCEPT ![c] = Tail(@)]
    /\ cacheRev' = [cacheRev EXCEPT ![c] = new.rev]
    /\ IF c = "ReplicaSetController"
         THEN /\ rscView' = new.view /\ rscExpect' = new.aux
              /\ UNCHANGED <<schedView, schedAssumed>>
         ELSE /\ schedView' = new.view /\ schedAssumed' = new.aux
              /\ UNCHANGED <<rscView, rscExpect>>
    /\ UNCHANGED <<storeVars, runtimeVars, kubeletKnows, viewVars, envVars, budgetVars>>

\* Node n's kubelet registers the Node object, runs and lists the pods
\* bound to n.
RegisterNode(n) ==
    /\ nodeState' = [nodeState EXCEPT ![n] = "Live"]
    /\ UNCHANGED <<depState, depReplicas, depVersion, depObserved, rsState, rsReplicas,
                   podState, podNode, podPhase, podOwners, podReady, nodeTainted>>
    /\ revision' = IF TrackRevisions = 1 THEN revision + 1 ELSE revision
    /\ nodeUp' = [nodeUp EXCEPT ![n] = TRUE]
    /\ kubeletUp' = [kubeletUp EXCEPT ![n] = TRUE]
    /\ kubeletView' = [p \in Pods |-> IF KubeletLag = 1 /\ podNode[p] = n THEN ProjKubelet(p) ELSE kubeletView[p]]
    /\ UNCHANGED <<runtimeVars, kubeletKnows, rscView, rscExpect, schedView, schedAssumed, dcAvailable, dcDeployment, nlcTainted,
                   gcGraph, pending, cacheRev, up, watchOK, budgetVars>>

\* Node n, not yet registered, joins.
NodeJoin(n) ==
    /\ nodeState[n] = "Absent"
    /\ RegisterNode(n)

\* Environment (NodesReturn = 1): deleted node n comes back under the same
\* name, with an empty runtime; its kubelet runs the pods still bound to n
\* (those the pod garbage collector has not deleted yet) again.
NodeReturn(n) ==
    /\ NodesReturn = 1 /\ nodeState[n] = "Gone"
    /\ RegisterNode(n)

\* Node n's machine is removed and its Node object deleted (the cloud node
\* controller's deletion of a vanished instance): its runtime goes with it;
\* the pods bound to it are left to the pod garbage collector.
NodeDelete(n) ==
    /\ nodeState[n] = "Live" /\ nodeDeletes < MaxNodeDeletes
    /\ nodeState' = [nodeState EXCEPT ![n] = "Gone"]
    /\ nodeTainted' = [nodeTainted EXCEPT ![n] = FALSE]
    /\ UNCHANGED <<depState, depReplicas, depVersion, depObserved, rsState, rsReplicas,
                   podState, podNode, podPhase, podOwners, podReady>>
    /\ revision' = IF TrackRevisions = 1 THEN revision + 1 ELSE revision
    /\ nodeUp' = [nodeUp EXCEPT ![n] = FALSE]
    /\ kubeletUp' = [kubeletUp EXCEPT ![n] = FALSE]
    /\ sandboxes' = [p \in Pods |-> IF sandboxNode[p] = n THEN 0 ELSE sandboxes[p]]
    /\ sandboxIP' = [p \in Pods |-> IF sandboxNode[p] = n THEN 0 ELSE sandboxIP[p]]
    /\ kubeletKnows' = [p \in Pods |-> IF sandboxNode[p] = n THEN FALSE ELSE kubeletKnows[p]]
    /\ kubeletView' = [p \in Pods |-> IF kubeletView[p][2] = n THEN NothingSeen ELSE kubeletView[p]]
    /\ sandboxNode' = [p \in Pods |-> IF sandboxNode[p] = n THEN 0 ELSE sandboxNode[p]]
    /\ nodeDeletes' = nodeDeletes + 1
    /\ UNCHANGED <<rscView, rscExpect, schedView, schedAssumed, dcAvailable, dcDeployment, nlcTainted, gcGraph, pending, cacheRev, up, watchOK,
                   crashes, watchDrops, nodeFailures, evictions, scales, deletes, probeFailures, completions>>

\* p is bound to a node whose Node object is gone: the pod garbage
\* collector force-deletes it (grace period 0).
PodGCDeletePod(p) ==
    /\ podState[p] # "Absent" /\ podNode[p] # 0 /\ nodeState[podNode[p]] # "Live"
    /\ RemovePod(p)
    /\ UNCHANGED <<depState, depReplicas, depVersion, depObserved, rsState, rsReplicas, nodeTainted, nodeState>>
    /\ Write(rscExpect, schedAssumed)
    /\ UNCHANGED budgetVars

\* p runs on n and its readiness probe passes (or it has none): Ready.
KubeletReportReady(n, p) ==
    /\ KubeletReady(n) /\ sandboxes[p] > 0 /\ sandboxNode[p] = n
    /\ podState[p] = "Live" /\ podPhase[p] = "Running" /\ ~podReady[p]
    /\ podReady' = [podReady EXCEPT ![p] = TRUE]
    /\ UNCHANGED <<depState, depReplicas, depVersion, depObserved, rsState, rsReplicas,
                   podState, podNode, podPhase, podOwners, nodeTainted, nodeState>>
    /\ Write(rscExpect, schedAssumed)
    /\ UNCHANGED budgetVars

\* Fault: the readiness probe of Ready pod p fails; Ready false.
KubeletProbeFail(n, p) ==
    /\ ReadinessProbes = 1 /\ probeFailures < MaxProbeFailures
    /\ KubeletReady(n) /\ sandboxes[p] > 0 /\ sandboxNode[p] = n
    /\ podState[p] = "Live" /\ podPhase[p] = "Running" /\ podReady[p]
    /\ podReady' = [podReady EXCEPT ![p] = FALSE]
    /\ probeFailures' = probeFailures + 1
    /\ UNCHANGED <<depState, depReplicas, depVersion, depObserved, rsState, rsReplicas,
                   podState, podNode, podPhase, podOwners, nodeTainted, nodeState>>
    /\ Write(rscExpect, schedAssumed)
    /\ UNCHANGED <<crashes, watchDrops, nodeFailures, evictions, scales, deletes, nodeDeletes, completions>>

\* The containers of running pod p exit 0.  Under restartPolicy Always they
\* are restarted and p is not Ready until its probe passes again (without a
\* probe nothing observable changes, so the step is not taken); under
\* OnFailure or Never the kubelet stops p's sandbox and, that done, reports
\* p Succeeded (WriteTerminal).
KubeletCompletePod(n, p) ==
    /\ completions < MaxCompletions
    /\ KubeletReady(n) /\ sandboxes[p] > 0 /\ sandboxNode[p] = n
    /\ podState[p] = "Live" /\ podPhase[p] = "Running"
    /\ RestartPolicy = 0 => (ReadinessProbes = 1 /\ podReady[p])
    /\ podReady' = [podReady EXCEPT ![p] = FALSE]
    /\ completions' = completions + 1
    /\ UNCHANGED <<depState, depReplicas, depVersion, depObserved, rsState, rsReplicas,
                   podState, podNode, podOwners, nodeTainted, nodeState>>
    /\ IF RestartPolicy = 0
         THEN /\ UNCHANGED podPhase
              /\ Write(rscExpect, schedAssumed)
         ELSE /\ podPhase' = [podPhase EXCEPT ![p] = "Succeeded"]
              /\ WriteTerminal(p, rscExpect, schedAssumed)
    /\ UNCHANGED <<crashes, watchDrops, nodeFailures, evictions, scales, deletes, nodeDeletes, probeFailures>>

\* p is Ready on a node that stopped reporting (its kubelet is down or the
\* node unreachable) or is tainted: the node lifecycle controller sets its
\* Ready condition false.  Upstream marks the pods when the node's Ready
\* condition turns Unknown, which can be before the rate-limited NoExecute
\* taint lands.
NodeLifecycleMarkPodNotReady(p) ==
    /\ podReady[p] /\ podState[p] # "Absent" /\ podNode[p] # 0
    /\ nodeTainted[podNode[p]] \/ ~KubeletReady(podNode[p])
    /\ podReady' = [podReady EXCEPT ![p] = FALSE]
    /\ UNCHANGED <<depState, depReplicas, depVersion, depObserved, rsState, rsReplicas,
                   podState, podNode, podPhase, podOwners, nodeTainted, nodeState>>
    /\ Write(rscExpect, schedAssumed)
    /\ UNCHANGED budgetVars

\* The kubelet of n sees pod p as it is now (KubeletLag = 1): bound to n,
\* terminating, or gone.  Its pod watch and pod workers coalesce updates, so
\* the view of each pod jumps to the current object; until then the kubelet
\* acts on the old one (any number of changes behind, which also covers a
\* dropped kubelet watch).
KubeletObservePod(n, p) ==
    /\ KubeletLag = 1 /\ KubeletReady(n)
    /\ ProjKubelet(p) # kubeletView[p]
    /\ ProjKubelet(p)[2] = n \/ kubeletView[p][2] = n
    /\ kubeletView' = [kubeletView EXCEPT ![p] = ProjKubelet(p)]
    /\ UNCHANGED <<storeVars, runtimeVars, kubeletKnows, rscView, rscExpect, schedView, schedAssumed,
                   dcAvailable, dcDeployment, nlcTainted, gcGraph, pending, cacheRev, envVars, budgetVars>>

\* The deployment controller sees ReplicaSet <<d, v>>'s
\* status.availableReplicas as the pods are now (DeploymentLag = 1).
\* Upstream the ReplicaSet controller writes that status from its own pod
\* cache and the deployment controller reads it from its ReplicaSet cache;
\* until then it acts on the old count (any number of changes behind).
DeploymentObserveReplicaSet(d, v) ==
    /\ DeploymentLag = 1 /\ dcAvailable[<<d, v>>] # AvailablePodsNow(d, v)
    /\ dcAvailable' = [dcAvailable EXCEPT ![<<d, v>>] = AvailablePodsNow(d, v)]
    /\ UNCHANGED <<storeVars, runtimeVars, kubeletKnows, rscView, rscExpect, schedView, schedAssumed,
                   kubeletView, dcDeployment, nlcTainted, gcGraph, pending, cacheRev, envVars, budgetVars>>

\* The deployment controller sees deployment d as it is now (DeploymentLag
\* = 1): created, its spec changed, marked for deletion, or gone.  Its
\* informer and work queue coalesce updates, so the view jumps to the
\* current object; until then it acts on the old one (any number of
\* changes behind, which also covers its dropped watches and restarts).
DeploymentObserveDeployment(d) ==
    /\ DeploymentLag = 1 /\ dcDeployment[d] # DepNow(d)
    /\ dcDeployment' = [dcDeployment EXCEPT ![d] = DepNow(d)]
    /\ UNCHANGED <<storeVars, runtimeVars, kubeletKnows, rscView, rscExpect, schedView, schedAssumed,
                   kubeletView, dcAvailable, nlcTainted, gcGraph, pending, cacheRev, envVars, budgetVars>>

\* The garbage collector's graph catches up with pod p (GCLag = 1): it gets
\* the pod once the pod informer delivers its creation and loses it once it
\* delivers its removal.  Until then the finalizer removal of p's
\* ReplicaSet (GCRemoveReplicaSet) does not see p as a blocking dependent.
GCObservePod(p) ==
    /\ GCLag = 1 /\ gcGraph[p] # (podState[p] # "Absent")
    /\ gcGraph' = [gcGraph EXCEPT ![p] = podState[p] # "Absent"]
    /\ UNCHANGED <<storeVars, runtimeVars, kubeletKnows, rscView, rscExpect, schedView, schedAssumed,
                   kubeletView, dcAvailable, dcDeployment, nlcTainted, pending, cacheRev, envVars, budgetVars>>

\* Taint-based eviction sees node n's taint as it is now (NodeLifecycleLag
\* = 1); until then it may evict the pods of a node whose taint was just
\* removed, or not yet evict those of a node just tainted.
NodeLifecycleObserveNode(n) ==
    /\ NodeLifecycleLag = 1 /\ nlcTainted[n] # nodeTainted[n]
    /\ nlcTainted' = [nlcTainted EXCEPT ![n] = nodeTainted[n]]
    /\ UNCHANGED <<storeVars, runtimeVars, kubeletKnows, rscView, rscExpect, schedView, schedAssumed,
                   kubeletView, dcAvailable, dcDeployment, gcGraph, pending, cacheRev, envVars, budgetVars>>

-----------------------------------------------------------------------------
(* The specification. *)

Init ==
    /\ depState = [d \in Deployments |-> "Absent"]
    /\ depReplicas = [d \in Deployments |-> 0]
    /\ depVersion = [d \in Deployments |-> 0]
    /\ depObserved = [d \in Deployments |-> FALSE]
    /\ rsState = [r \in RSs |-> "Absent"]
    /\ rsReplicas = [r \in RSs |-> 0]
    /\ podState = [p \in Pods |-> "Absent"]
    /\ podNode = [p \in Pods |-> 0]
    /\ podPhase = [p \in Pods |-> "Pending"]
    /\ podOwners = [p \in Pods |-> {}]
    /\ podReady = [p \in Pods |-> FALSE]
    /\ nodeTainted = [n \in Nodes |-> FALSE]
    /\ nodeState = [n \in Nodes |-> IF n <= NumNodes - JoiningNodes THEN "Live" ELSE "Absent"]
    /\ revision = 0
    /\ sandboxes = [p \in Pods |-> 0]
    /\ sandboxNode = [p \in Pods |-> 0]
    /\ sandboxIP = [p \in Pods |-> 0]
    /\ kubeletKnows = [p \in Pods |-> FALSE]
    /\ rscView = [p \in Pods |-> "Absent"]
    /\ rscExpect = [p \in Pods |-> "None"]
    /\ schedView = [p \in Pods |-> 0]
    /\ schedAssumed = [p \in Pods |-> 0]
    /\ kubeletView = [p \in Pods |-> NothingSeen]
    /\ dcAvailable = [r \in RSs |-> 0]
    /\ dcDeployment = [d \in Deployments |-> NoDeploymentSeen]
    /\ nlcTainted = [n \in Nodes |-> FALSE]
    /\ gcGraph = [p \in Pods |-> FALSE]
    /\ pending = [c \in Controllers |-> <<>>]
    /\ cacheRev = [c \in Controllers |-> 0]
    /\ up = [c \in Controllers |-> TRUE]
    /\ watchOK = [c \in Controllers |-> TRUE]
    /\ kubeletUp = [n \in Nodes |-> nodeState[n] = "Live"]
    /\ nodeUp = [n \in Nodes |-> nodeState[n] = "Live"]
    /\ crashes = 0 /\ watchDrops = 0 /\ nodeFailures = 0
    /\ evictions = 0 /\ scales = 0 /\ deletes = 0
    /\ nodeDeletes = 0 /\ probeFailures = 0 /\ completions = 0

Next ==
    \/ \E d \in Deployments :
         \/ CreateDeployment(d)
         \/ UpdateDeployment(d)
         \/ \E r \in 0..Replicas : ScaleDeployment(d, r)
         \/ \E policy \in {"Background", "Foreground"} : DeleteDeployment(d, policy)
         \/ DeploymentCreateReplicaSet(d)
         \/ DeploymentScaleUp(d)
         \/ \E v \in Versions : DeploymentScaleDown(d, v)
         \/ DeploymentObserve(d)
         \/ \E v \in Versions : ReplicaSetCreatePod(d, v)
         \/ \E v \in Versions : GCDeleteReplicaSet(d, v)
         \/ \E v \in Versions : GCRemoveReplicaSet(d, v)
         \/ GCRemoveDeployment(d)
         \/ \E v \in Versions : DeploymentObserveReplicaSet(d, v)
         \/ DeploymentObserveDeployment(d)
    \/ \E p \in Pods :
         \/ ReplicaSetDeletePod(p)
         \/ GCDeletePod(p)
         \/ GCObservePod(p)
         \/ \E n \in Nodes : SchedulerBindPod(p, n)
         \/ NodeLifecycleEvictPod(p)
         \/ NodeLifecycleMarkPodNotReady(p)
         \/ PodGCDeletePod(p)
         \/ \E n \in Nodes :
              \/ KubeletStartPod(n, p)
              \/ KubeletRejectPod(n, p)
              \/ KubeletUpdatePodStatus(n, p)
              \/ KubeletStopPod(n, p)
              \/ KubeletFinalizePod(n, p)
              \/ KubeletEvictPod(n, p)
              \/ KubeletReportReady(n, p)
              \/ KubeletProbeFail(n, p)
              \/ KubeletCompletePod(n, p)
              \/ KubeletObservePod(n, p)
    \/ \E n \in Nodes :
         \/ NodeLifecycleTaintNode(n)
         \/ NodeLifecycleUntaintNode(n)
         \/ NodeLifecycleObserveNode(n)
         \/ KubeletCrash(n)
         \/ KubeletRestart(n)
         \/ NodeFail(n)
         \/ NodeRecover(n)
         \/ NodeJoin(n)
         \/ NodeReturn(n)
         \/ NodeDelete(n)
    \/ \E c \in Controllers :
         \/ ControllerCrash(c)
         \/ ControllerRestart(c)
         \/ WatchDrop(c)
         \/ Relist(c)
         \/ DeliverWatchEvent(c)

\* Weak fairness for every component action, every recovery, informer
\* delivery and a provisioned node's join; none for users and faults
\* (including node deletion, probe failures and completions), which may
\* simply stop.
Fairness ==
    /\ \A d \in Deployments :
         /\ WF_vars(DeploymentCreateReplicaSet(d)) /\ WF_vars(DeploymentScaleUp(d))
         /\ WF_vars(DeploymentObserve(d)) /\ WF_vars(GCRemoveDeployment(d))
         /\ WF_vars(DeploymentObserveDeployment(d))
         /\ \A v \in Versions :
              /\ WF_vars(DeploymentScaleDown(d, v)) /\ WF_vars(ReplicaSetCreatePod(d, v))
              /\ WF_vars(GCDeleteReplicaSet(d, v)) /\ WF_vars(GCRemoveReplicaSet(d, v))
              /\ WF_vars(DeploymentObserveReplicaSet(d, v))
    /\ \A p \in Pods :
         /\ WF_vars(ReplicaSetDeletePod(p)) /\ WF_vars(GCDeletePod(p)) /\ WF_vars(NodeLifecycleEvictPod(p))
         /\ WF_vars(NodeLifecycleMarkPodNotReady(p)) /\ WF_vars(PodGCDeletePod(p))
         /\ WF_vars(GCObservePod(p))
         /\ \A n \in Nodes :
              /\ WF_vars(SchedulerBindPod(p, n)) /\ WF_vars(KubeletStartPod(n, p))
              /\ WF_vars(KubeletRejectPod(n, p)) /\ WF_vars(KubeletUpdatePodStatus(n, p))
              /\ WF_vars(KubeletStopPod(n, p)) /\ WF_vars(KubeletFinalizePod(n, p))
              /\ WF_vars(KubeletReportReady(n, p)) /\ WF_vars(KubeletObservePod(n, p))
    /\ \A n \in Nodes :
         /\ WF_vars(NodeLifecycleTaintNode(n)) /\ WF_vars(NodeLifecycleUntaintNode(n))
         /\ WF_vars(NodeLifecycleObserveNode(n))
         /\ WF_vars(KubeletRestart(n)) /\ WF_vars(NodeRecover(n)) /\ WF_vars(NodeJoin(n))
    /\ \A c \in Controllers : WF_vars(ControllerRestart(c)) /\ WF_vars(Relist(c)) /\ WF_vars(DeliverWatchEvent(c))

Spec == Init /\ [][Next]_vars /\ Fairness

-----------------------------------------------------------------------------
(* Properties.  IDs as in spec/README.md; operator names replace the dash  *)
(* by an underscore.                                                        *)

TypeOK ==
    /\ depState \in [Deployments -> {"Absent", "Live", "Deleting", "Gone"}]
    /\ depReplicas \in [Deployments -> 0..Replicas]
    /\ depVersion \in [Deployments -> 0..NumVersions]
    /\ depObserved \in [Deployments -> BOOLEAN]
    /\ rsState \in [RSs -> {"Absent", "Live", "Deleting"}]
    /\ rsReplicas \in [RSs -> 0..Replicas]
    /\ podState \in [Pods -> {"Absent", "Live", "Deleting"}]
    /\ podNode \in [Pods -> 0..NumNodes]
    /\ podPhase \in [Pods -> {"Pending", "Running", "Failed", "Succeeded"}]
    /\ podOwners \in [Pods -> SUBSET Versions]
    /\ podReady \in [Pods -> BOOLEAN]
    /\ nodeTainted \in [Nodes -> BOOLEAN]
    /\ nodeState \in [Nodes -> {"Absent", "Live", "Gone"}]
    /\ revision \in Nat
    /\ \A c \in Controllers : Len(pending[c]) <= MaxLag /\ cacheRev[c] \in Nat
    /\ sandboxes \in [Pods -> 0..2]
    /\ sandboxNode \in [Pods -> 0..NumNodes]
    /\ sandboxIP \in [Pods -> 0..IPsPerNode]
    /\ kubeletKnows \in [Pods -> BOOLEAN]
    /\ rscView \in [Pods -> {"Absent", "Inactive", "Active"}]
    /\ rscExpect \in [Pods -> {"None", "Add", "Delete"}]
    /\ schedView \in [Pods -> 0..NumNodes + 1]
    /\ schedAssumed \in [Pods -> 0..NumNodes]
    /\ kubeletView \in [Pods -> {NothingSeen} \cup ({"Live", "Deleting"} \X Nodes)]
    /\ dcAvailable \in [RSs -> 0..PodsPerRS]
    /\ dcDeployment \in [Deployments -> [state : {"Absent", "Live", "Deleting", "Gone"},
                                          replicas : 0..Replicas, version : 0..NumVersions]]
    /\ nlcTainted \in [Nodes -> BOOLEAN]
    /\ gcGraph \in [Pods -> BOOLEAN]
    /\ up \in [Controllers -> BOOLEAN] /\ watchOK \in [Controllers -> BOOLEAN]
    /\ kubeletUp \in [Nodes -> BOOLEAN] /\ nodeUp \in [Nodes -> BOOLEAN]

StoreChanged == objectVars' # objectVars
CacheCurrent(c) == \A p \in Pods : IF c = "ReplicaSetController" THEN rscView[p] = ProjRS(p)
                                   ELSE schedView[p] = ProjSched(p)
\* Controller c's cache followed by its queued events is the current state,
\* and the queued revisions increase strictly above the cache's.
WatchComplete(c) ==
    LET mem == [view |-> IF c = "ReplicaSetController" THEN rscView ELSE schedView] IN
    /\ \A p \in Pods : Replayed(mem, pending[c], p) = Project(c, p)
    /\ TrackRevisions = 1 =>
         \A i \in 1..Len(pending[c]) : pending[c][i].rev > (IF i = 1 THEN cacheRev[c] ELSE pending[c][i - 1].rev)

\* STORE-1: every write gets the next global revision (its resourceVersion;
\* other steps leave the revision), and an established watch delivers every
\* write in revision order: after any write, the cache of every controller
\* whose watch is up, followed by its queued events, is the current state.
STORE_1 == [][/\ TrackRevisions = 1 => revision' = IF StoreChanged THEN revision + 1 ELSE revision
              /\ StoreChanged => \A c \in Controllers : (up'[c] /\ watchOK'[c]) => WatchComplete(c)']_vars

\* STORE-2: a create succeeds only on an absent key: an existing pod is
\* never replaced by a freshly created one.
STORE_2 == [][\A p \in Pods :
                (podState[p] # "Absent" /\ podState'[p] = "Live" /\ podNode'[p] = 0 /\ podPhase'[p] = "Pending")
                => ~(podState[p] = "Deleting" \/ podNode[p] # 0 \/ podPhase[p] # "Pending")]_vars

\* STORE-3: a compare-and-swap write (the binding) succeeds only if the
\* writer's copy is current.
STORE_3 == [][\A p \in Pods : (podNode'[p] # podNode[p] /\ podNode'[p] # 0) => schedView[p] = ProjSched(p)]_vars

\* STORE-4: a list returns the current state.
STORE_4 == [][\A c \in Controllers : (~(up[c] /\ watchOK[c]) /\ up'[c] /\ watchOK'[c]) => CacheCurrent(c)']_vars

\* RS-1: a pod is created only while its ReplicaSet really has fewer active
\* pods than spec.replicas (expectations make up for the lagging cache).
Created(p) == \/ podState[p] = "Absent" /\ podState'[p] = "Live"
              \/ /\ podState[p] # "Absent" /\ podState'[p] = "Live" /\ podNode'[p] = 0 /\ podPhase'[p] = "Pending"
                 /\ (podState[p] = "Deleting" \/ podNode[p] # 0 \/ podPhase[p] # "Pending")
RS_1 == [][\A p \in Pods : Created(p) =>
             Cardinality({q \in PodsOf(p[1], p[2]) : podState'[q] = "Live" /\ ~Terminal(podPhase'[q])})
               <= rsReplicas[<<p[1], p[2]>>]]_vars

\* RS-2: a pod has at most one controller owner.
RS_2 == \A p \in Pods : Cardinality(podOwners[p]) <= 1

\* DEP-1: once the controller has observed the current generation, the
\* ReplicaSets' replicas total at most replicas + maxSurge.
DEP_1 == \A d \in Deployments : (depState[d] = "Live" /\ depObserved[d]) => TotalReplicas(d) <= depReplicas[d] + MaxSurge

\* DEP-2: a ReplicaSet is scaled down only as far as keeps
\* replicas - maxUnavailable pods of the deployment available, as the
\* controller counts them and sees replicas (the store's once it has
\* observed the current generation: depObserved implies a current view).
DEP_2 == [][\A d \in Deployments, v \in Versions :
              LET r == <<d, v>>  lost == AvailablePods(d, v) - rsReplicas'[r] IN
              (rsState[r] = "Live" /\ rsState'[r] = "Live" /\ rsReplicas'[r] < rsReplicas[r] /\ lost > 0)
              => AvailableTotal(d) - lost >= DCSees(d).replicas - MaxUnavailable]_vars

\* GC-1: a live pod is deleted only because its owners are gone, its node is
\* tainted or deleted, or its ReplicaSet controller believed there were too
\* many.
GC_1 == [][\A p \in Pods : (podState[p] = "Live" /\ podState'[p] # "Live") =>
             \/ OwnersGone(p)
             \/ podNode[p] # 0 /\ (nodeTainted[podNode[p]] \/ NLCSeesTainted(podNode[p]) \/ nodeState[podNode[p]] # "Live")
             \/ Believed(p[1], p[2]) > rsReplicas[<<p[1], p[2]>>]]_vars

\* GC-2: an owner deleted in the foreground goes only after its blocking
\* dependents are gone: for a ReplicaSet, gone from the garbage collector's
\* graph (GCLag = 1; the store otherwise).
GC_2 == [][/\ \A d \in Deployments, v \in Versions :
                (rsState[<<d, v>>] = "Deleting" /\ rsState'[<<d, v>>] = "Absent")
                => \A k \in Slots : ~GCSees(<<d, v, k>>)
           /\ \A d \in Deployments :
                (depState[d] = "Deleting" /\ depState'[d] = "Gone")
                => \A v \in Versions : rsState[<<d, v>>] = "Absent"]_vars

\* SCHED-1: a pod is bound at most once and never re-bound.
SCHED_1 == [][\A p \in Pods : (podNode[p] # 0 /\ podState'[p] # "Absent") => podNode'[p] = podNode[p]]_vars

\* SCHED-2: the non-terminal pods bound to a node never exceed its capacity.
SCHED_2 == \A n \in Nodes : BoundPods(n) <= Capacity

\* SCHED-3: a pod is bound only to a node without a NoExecute taint.
SCHED_3 == [][\A p \in Pods : (podNode'[p] # podNode[p] /\ podNode'[p] # 0) => ~nodeTainted[podNode'[p]]]_vars

\* SCHED-4: a pod is bound only to a node whose labels match its nodeSelector.
SCHED_4 == \A p \in Pods : (podState[p] # "Absent" /\ podNode[p] # 0) => MatchesNode(p, podNode[p])

\* SCHED-5: a pod is bound only to a registered node (its Node object exists).
SCHED_5 == [][\A p \in Pods : (podNode'[p] # podNode[p] /\ podNode'[p] # 0) => nodeState[podNode'[p]] = "Live"]_vars

\* KUBELET-1: a kubelet runs only pods bound to its node.
KUBELET_1 == \A p \in Pods : sandboxes[p] > 0 => sandboxNode[p] = podNode[p]

\* KUBELET-2: a pod has at most one live sandbox.
KUBELET_2 == \A p \in Pods : sandboxes[p] <= 1

\* KUBELET-3: pod IPs are unique among a node's live sandboxes.
KUBELET_3 == \A p, q \in Pods : (p # q /\ sandboxes[p] > 0 /\ sandboxes[q] > 0 /\ sandboxNode[p] = sandboxNode[q])
                                 => sandboxIP[p] # sandboxIP[q]

\* KUBELET-4: an IP is held only by a live sandbox: removal releases it.
KUBELET_4 == \A p \in Pods : sandboxes[p] = 0 => (sandboxIP[p] = 0 /\ sandboxNode[p] = 0)

\* KUBELET-5: a pod's phase never leaves Failed or Succeeded.
KUBELET_5 == [][\A p \in Pods : (Terminal(podPhase[p]) /\ podState'[p] # "Absent") => podPhase'[p] = podPhase[p]]_vars

\* KUBELET-6: a pod is Ready only while Running.
KUBELET_6 == \A p \in Pods : podReady[p] => podPhase[p] = "Running"

\* KUBELET-7: a pod reaches Succeeded only under restartPolicy OnFailure or
\* Never (under Always, completed containers are restarted).
KUBELET_7 == [][RestartPolicy = 0 => \A p \in Pods : podPhase'[p] = "Succeeded" => podPhase[p] = "Succeeded"]_vars

\* KUBELET-8: the kubelet writes a terminal phase only for a pod none of whose
\* sandboxes is live: its termination completed first (or in the same step).
\* A step that makes p's phase terminal while the kubelet of p's node runs
\* and is reachable is that kubelet's: every kubelet action needs
\* KubeletReady, and the other components that may set a phase (upstream's
\* pod garbage collector, Failed before its force delete) act only on pods
\* of nodes that are gone or not ready, where a dead node's sandbox may
\* linger; the property says nothing of those.
KUBELET_8 == [][\A p \in Pods :
                   (/\ ~Terminal(podPhase[p]) /\ Terminal(podPhase'[p])
                    /\ podNode[p] # 0 /\ KubeletReady(podNode[p]))
                   => sandboxes'[p] = 0]_vars

\* LIVE-1: every deployment eventually has exactly replicas Ready pods of its
\* current template, none of older ones, and has observed its generation.
DeploymentsConverged ==
    \A d \in Deployments : depState[d] = "Live" =>
        LET cur == depVersion[d]  r == depReplicas[d] IN
        /\ depObserved[d] /\ rsState[<<d, cur>>] = "Live" /\ rsReplicas[<<d, cur>>] = r
        /\ ActivePods(d, cur) = r /\ AvailablePodsNow(d, cur) = r
        /\ \A v \in Versions \ {cur} : rsReplicas[<<d, v>>] = 0 /\ ActivePods(d, v) = 0
LIVE_1 == <>[]DeploymentsConverged

\* LIVE-2: every pod and ReplicaSet whose owner is gone is eventually
\* deleted, and foreground deletions finish.
NoOrphans ==
    /\ \A p \in Pods : podState[p] # "Absent" => ~OwnersGone(p)
    /\ \A d \in Deployments : depState[d] # "Deleting"
    /\ \A d \in Deployments, v \in Versions : rsState[<<d, v>>] # "Absent" => depState[d] = "Live"
LIVE_2 == <>[]NoOrphans

\* LIVE-3: every sandbox of a deleted, terminal or foreign pod is eventually
\* removed and its IP released.
NoLeakedSandboxes ==
    \A p \in Pods : sandboxes[p] > 0 => (podState[p] = "Live" /\ ~Terminal(podPhase[p]) /\ podNode[p] = sandboxNode[p])
LIVE_3 == <>[]NoLeakedSandboxes

\* LIVE-4: every pod bound to a deleted node is eventually deleted.
NoPodsOnDeletedNodes == \A p \in Pods : (podState[p] # "Absent" /\ podNode[p] # 0) => nodeState[podNode[p]] # "Gone"
LIVE_4 == <>[]NoPodsOnDeletedNodes

=============================================================================
