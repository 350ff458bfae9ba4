package model

// Mutants: deliberately broken variants of actions, switchable by name
// (New(cfg, name)). Each breaks the property it names; the tests check that
// the model checker finds every one of them with a trace. A checker that
// cannot fail proves nothing.
const (
	MutantWatchSkipsDeleteEvents             = "WatchSkipsDeleteEvents"
	MutantCreateOverwritesExistingKey        = "CreateOverwritesExistingKey"
	MutantStoreAcceptsStaleBinding           = "StoreAcceptsStaleBinding"
	MutantRelistServedFromStaleCache         = "RelistServedFromStaleCache"
	MutantReplicaSetIgnoresExpectations      = "ReplicaSetIgnoresExpectations"
	MutantReplicaSetAdoptsOtherTemplates     = "ReplicaSetAdoptsOtherTemplates"
	MutantDeploymentIgnoresMaxSurge          = "DeploymentIgnoresMaxSurge"
	MutantDeploymentCountsUnreadyAsAvailable = "DeploymentCountsUnreadyAsAvailable"
	MutantGCDeletesPodsOfLiveOwner           = "GCDeletesPodsOfLiveOwner"
	MutantGCIgnoresBlockOwnerDeletion        = "GCIgnoresBlockOwnerDeletion"
	MutantBindingOverwritesBinding           = "BindingOverwritesBinding"
	MutantSchedulerIgnoresCapacity           = "SchedulerIgnoresCapacity"
	MutantSchedulerIgnoresAssumedPods        = "SchedulerIgnoresAssumedPods"
	MutantSchedulerIgnoresTaints             = "SchedulerIgnoresTaints"
	MutantKubeletRunsPodBoundElsewhere       = "KubeletRunsPodBoundElsewhere"
	MutantKubeletForgetsSandboxesOnRestart   = "KubeletForgetsSandboxesOnRestart"
	MutantKubeletReusesIP                    = "KubeletReusesIP"
	MutantKubeletLeaksIPOnStop               = "KubeletLeaksIPOnStop"
	MutantKubeletRestartsFailedPod           = "KubeletRestartsFailedPod"
	MutantDeploymentNeverRemovesOldReplicas  = "DeploymentNeverRemovesOldReplicas"
	MutantGCNeverDeletesOrphans              = "GCNeverDeletesOrphans"
	MutantKubeletNeverFinalizesDeletion      = "KubeletNeverFinalizesDeletion"
	MutantKubeletNeverStopsDeletedPods       = "KubeletNeverStopsDeletedPods"
	MutantDeploymentFlapsReplicas            = "DeploymentFlapsReplicas"
	MutantStatusWriteKeepsRevision           = "StatusWriteKeepsRevision"
	MutantInformerDeliversNewestFirst        = "InformerDeliversNewestFirst"
	MutantSchedulerIgnoresNodeSelector       = "SchedulerIgnoresNodeSelector"
	MutantSchedulerBindsToDeletedNode        = "SchedulerBindsToDeletedNode"
	MutantPodGCIgnoresDeletedNodes           = "PodGCIgnoresDeletedNodes"
	MutantDeploymentIgnoresReadyCondition    = "DeploymentIgnoresReadyCondition"
	MutantKubeletKeepsReadyOnExit            = "KubeletKeepsReadyOnExit"
	MutantKubeletCompletesAlwaysPods         = "KubeletCompletesAlwaysPods"
	MutantDeploymentObservesStaleGeneration  = "DeploymentObservesStaleGeneration"
	MutantKubeletFailsPodBeforeStop          = "KubeletFailsPodBeforeStop"
)

// MutantInfo describes one mutant: the action it breaks, how, and the
// property the checker must then report violated.
type MutantInfo struct {
	Name     string
	Action   Kind
	Breaks   string // property ID
	Describe string
}

// Mutants is the catalog, one or more per property.
var Mutants = []MutantInfo{
	{MutantWatchSkipsDeleteEvents, KubeletFinalizePod, "STORE-1", "the watch cache skips the event of a pod's final deletion"},
	{MutantCreateOverwritesExistingKey, ReplicaSetCreatePod, "STORE-2", "the name generator reuses a name and the store's create does not check the key is free"},
	{MutantStoreAcceptsStaleBinding, SchedulerBindPod, "STORE-3", "a binding that timed out is retried from the stale cache and the store applies it without a resourceVersion precondition"},
	{MutantRelistServedFromStaleCache, Relist, "STORE-4", "a relist is answered from a lagging cache instead of a consistent read"},
	{MutantReplicaSetIgnoresExpectations, ReplicaSetCreatePod, "RS-1", "the ReplicaSet controller counts only what its cache shows, ignoring creations not yet observed"},
	{MutantReplicaSetAdoptsOtherTemplates, ReplicaSetAdoptPod, "RS-2", "a ReplicaSet selector without pod-template-hash adopts its siblings' pods"},
	{MutantDeploymentIgnoresMaxSurge, DeploymentScaleUp, "DEP-1", "the new ReplicaSet is scaled straight to replicas, ignoring maxSurge"},
	{MutantDeploymentCountsUnreadyAsAvailable, DeploymentScaleDown, "DEP-2", "pods that are not Ready are counted as available when scaling old ReplicaSets down"},
	{MutantGCDeletesPodsOfLiveOwner, GCDeletePod, "GC-1", "the garbage collector looks at the owner's owner and deletes pods whose ReplicaSet is live"},
	{MutantGCIgnoresBlockOwnerDeletion, GCRemoveReplicaSet, "GC-2", "the garbage collector removes the foregroundDeletion finalizer while blocking dependents remain"},
	{MutantBindingOverwritesBinding, SchedulerBindPod, "SCHED-1", "pods on a tainted node are re-bound elsewhere and the store lets the binding replace the old one"},
	{MutantSchedulerIgnoresCapacity, SchedulerBindPod, "SCHED-2", "the scheduler does not filter nodes by capacity"},
	{MutantSchedulerIgnoresAssumedPods, SchedulerBindPod, "SCHED-2", "the scheduler does not count assumed pods (bound but not yet observed)"},
	{MutantSchedulerIgnoresTaints, SchedulerBindPod, "SCHED-3", "the scheduler does not filter tainted nodes"},
	{MutantKubeletRunsPodBoundElsewhere, KubeletStartPod, "KUBELET-1", "a kubelet runs every scheduled pod, not only those bound to its node"},
	{MutantKubeletForgetsSandboxesOnRestart, KubeletRestart, "KUBELET-2", "a restarted kubelet does not rebuild its state from the runtime and starts a second sandbox"},
	{MutantKubeletReusesIP, KubeletStartPod, "KUBELET-3", "the IP allocator hands out the first address of the pool every time"},
	{MutantKubeletLeaksIPOnStop, KubeletStopPod, "KUBELET-4", "removing a sandbox does not release its IP"},
	{MutantKubeletRestartsFailedPod, KubeletUpdatePodStatus, "KUBELET-5", "the kubelet starts a Failed pod again (admitted anew: a new sandbox, its containers) and reports it Running"},
	{MutantDeploymentNeverRemovesOldReplicas, DeploymentScaleDown, "LIVE-1", "the deployment controller never scales old ReplicaSets down"},
	{MutantGCNeverDeletesOrphans, GCDeletePod, "LIVE-2", "the garbage collector never deletes pods whose owner is gone"},
	{MutantKubeletNeverFinalizesDeletion, KubeletFinalizePod, "LIVE-2", "the kubelet stops a terminating pod but never deletes the object"},
	{MutantKubeletNeverStopsDeletedPods, KubeletStopPod, "LIVE-3", "the kubelet never stops the sandbox of a pod it sees terminating"},
	{MutantDeploymentFlapsReplicas, DeploymentScaleDown, "LIVE-1", "the controller scales a fully available ReplicaSet down by one, then up again, forever (a fair cycle)"},
	{MutantStatusWriteKeepsRevision, KubeletUpdatePodStatus, "STORE-1", "a pod status write is stored without taking the next revision"},
	{MutantInformerDeliversNewestFirst, DeliverWatchEvent, "STORE-1", "an informer applies its newest queued event before older ones: the cache goes back in time"},
	{MutantSchedulerIgnoresNodeSelector, SchedulerBindPod, "SCHED-4", "the scheduler does not filter nodes by the pod's nodeSelector"},
	{MutantSchedulerBindsToDeletedNode, SchedulerBindPod, "SCHED-5", "the scheduler binds to nodes whose Node object is gone (or not yet registered)"},
	{MutantPodGCIgnoresDeletedNodes, PodGCDeletePod, "LIVE-4", "the pod garbage collector never deletes pods bound to deleted nodes"},
	{MutantDeploymentIgnoresReadyCondition, DeploymentScaleDown, "DEP-2", "Running pods whose readiness probe has not passed are counted as available"},
	{MutantKubeletKeepsReadyOnExit, KubeletCompletePod, "KUBELET-6", "a pod whose containers completed keeps its Ready condition"},
	{MutantKubeletCompletesAlwaysPods, KubeletCompletePod, "KUBELET-7", "the kubelet lets a restartPolicy Always pod whose containers exited 0 become Succeeded"},
	{MutantDeploymentObservesStaleGeneration, DeploymentObserve, "DEP-1", "the deployment controller writes observedGeneration without the resourceVersion precondition, claiming a generation its lagging view has not seen (needs DeploymentLag)"},
	{MutantKubeletFailsPodBeforeStop, KubeletEvictPod, "KUBELET-8", "node-pressure eviction reports the pod Failed while its sandbox still runs (stopped later by KubeletStopPod): the order before the kubelet held a terminal phase back"},
}

var mutantByName = func() map[string]MutantInfo {
	mp := map[string]MutantInfo{}
	for _, mi := range Mutants {
		mp[mi.Name] = mi
	}
	return mp
}()

// LookupMutant returns the catalog entry of a mutant.
func LookupMutant(name string) (MutantInfo, bool) { mi, ok := mutantByName[name]; return mi, ok }
