package model

import "fmt"

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

// mutantConfigs holds, for each mutant, the constants of the Small
// configuration to change so that its bug can show (MutantConfig).
var mutantConfigs = map[string]map[string]int{
	MutantWatchSkipsDeleteEvents:             {},
	MutantCreateOverwritesExistingKey:        {"Replicas": 2, "Capacity": 2},
	MutantStoreAcceptsStaleBinding:           {"MaxWatchDrops": 1},
	MutantRelistServedFromStaleCache:         {"MaxWatchDrops": 1},
	MutantReplicaSetIgnoresExpectations:      {"MaxWatchDrops": 1},
	MutantReplicaSetAdoptsOtherTemplates:     {},
	MutantDeploymentIgnoresMaxSurge:          {"Replicas": 2, "Capacity": 2, "PodsPerRS": 3},
	MutantDeploymentCountsUnreadyAsAvailable: {},
	MutantGCDeletesPodsOfLiveOwner:           {"MaxDeletes": 1},
	MutantGCIgnoresBlockOwnerDeletion:        {"MaxDeletes": 1},
	MutantBindingOverwritesBinding:           {"MaxNodeFailures": 1},
	MutantSchedulerIgnoresCapacity:           {"Replicas": 2},
	MutantSchedulerIgnoresAssumedPods:        {"Replicas": 2, "MaxWatchDrops": 1},
	MutantSchedulerIgnoresTaints:             {"MaxNodeFailures": 1},
	MutantKubeletRunsPodBoundElsewhere:       {},
	MutantKubeletForgetsSandboxesOnRestart:   {"MaxCrashes": 1, "Capacity": 2},
	MutantKubeletReusesIP:                    {"Replicas": 2, "Capacity": 2},
	MutantKubeletLeaksIPOnStop:               {},
	MutantKubeletRestartsFailedPod:           {"MaxEvictions": 1},
	MutantDeploymentNeverRemovesOldReplicas:  {},
	MutantGCNeverDeletesOrphans:              {"MaxDeletes": 1},
	MutantKubeletNeverFinalizesDeletion:      {"MaxDeletes": 1},
	MutantKubeletNeverStopsDeletedPods:       {},
	MutantKubeletFailsPodBeforeStop:          {"MaxEvictions": 1},
	MutantDeploymentFlapsReplicas:            {"Replicas": 2, "Capacity": 2, "MaxUnavailable": 1},
	MutantStatusWriteKeepsRevision:           {"TrackRevisions": 1},
	MutantInformerDeliversNewestFirst:        {"MaxLag": 2},
	MutantSchedulerIgnoresNodeSelector:       {"LabeledNodes": 1, "SelectorDeployments": 1},
	MutantSchedulerBindsToDeletedNode:        {"JoiningNodes": 1},
	MutantPodGCIgnoresDeletedNodes:           {"MaxNodeDeletes": 1},
	MutantDeploymentIgnoresReadyCondition:    {"ReadinessProbes": 1},
	MutantDeploymentObservesStaleGeneration:  {"DeploymentLag": 1, "MaxScales": 1, "Replicas": 2, "Capacity": 2, "PodsPerRS": 3},
	MutantKubeletKeepsReadyOnExit:            {"RestartPolicy": RestartNever, "MaxCompletions": 1},
	MutantKubeletCompletesAlwaysPods:         {"MaxCompletions": 1},
}

// MutantConfig returns the small configuration in which the mutant's bug
// shows, named "mutant-NAME": Small with the constants of mutantConfigs
// changed. `kubeproof model check --mutant NAME` checks it when no --config
// is given, and the checker tests check every mutant in it.
func MutantConfig(name string) (Config, error) {
	if _, ok := mutantByName[name]; !ok {
		return Config{}, fmt.Errorf("configuration of mutant %q: no such mutant (see kubeproof model list)", name)
	}
	set, ok := mutantConfigs[name]
	if !ok {
		return Config{}, fmt.Errorf("configuration of mutant %s: none in model.mutantConfigs", name)
	}
	cfg, err := LoadConfig("Small")
	if err != nil {
		return Config{}, fmt.Errorf("configuration of mutant %s: %w", name, err)
	}
	fields := cfg.constantFields()
	for k, v := range set {
		f, ok := fields[k]
		if !ok {
			return Config{}, fmt.Errorf("configuration of mutant %s: no constant %s", name, k)
		}
		*f = v
	}
	cfg.Name = "mutant-" + name
	return cfg, cfg.Validate()
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
