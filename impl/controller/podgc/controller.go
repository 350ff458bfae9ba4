package podgc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

// FieldManager names the collector's status writes.
const FieldManager = "PodGC"

// parallelDeletes bounds the deletions in flight during one pass.
const parallelDeletes = 8

// Controller runs Decide over the shared pod and node informers every
// check period and carries out the deletions.
type Controller struct {
	client kubernetes.Interface
	pods   corelisters.PodLister
	nodes  corelisters.NodeLister
	synced []cache.InformerSynced
	clock  clock.WithTicker
	cfg    Config
	// metrics count the force deletions and their failures.
	metrics *metrics

	// quarantined is touched only by the one goroutine running passes.
	quarantined map[string]time.Time
}

// New wires the collector to the pod and node informers (start their
// factory after New). A nil clk means real time.
func New(client kubernetes.Interface, pods coreinformers.PodInformer, nodes coreinformers.NodeInformer, clk clock.WithTicker, cfg Config) *Controller {
	if clk == nil {
		clk = clock.RealClock{}
	}
	if cfg.CheckPeriod <= 0 {
		cfg.CheckPeriod = DefaultCheckPeriod
	}
	if cfg.Quarantine <= 0 {
		cfg.Quarantine = DefaultQuarantine
	}
	return &Controller{
		client:  client,
		pods:    pods.Lister(),
		nodes:   nodes.Lister(),
		synced:  []cache.InformerSynced{pods.Informer().HasSynced, nodes.Informer().HasSynced},
		clock:   clk,
		cfg:     cfg,
		metrics: newMetrics(),
	}
}

// Run waits for the caches, then collects once per check period until ctx
// is done.
func (c *Controller) Run(ctx context.Context) error {
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return fmt.Errorf("pod-garbage-collector: caches did not sync: %w", ctx.Err())
	}
	ticker := c.clock.NewTicker(c.cfg.CheckPeriod)
	defer ticker.Stop()
	for {
		if err := c.Collect(ctx); err != nil && ctx.Err() == nil {
			slog.Debug("pod-garbage-collector: pass incomplete", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C():
		}
	}
}

// Collect is one pass: decide from the listers, confirm quarantined nodes
// are gone with a GET to the API server, then delete. It returns the
// errors of the writes that failed (the next pass retries them).
func (c *Controller) Collect(ctx context.Context) error {
	pods, err := c.pods.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("listing pods: %w", err)
	}
	nodes, err := c.nodes.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	now := c.clock.Now()
	plan := Decide(Observed{Pods: pods, Nodes: nodes, Quarantined: c.quarantined, Now: now}, c.cfg)
	c.quarantined = plan.Quarantined
	var errs []error
	gone := map[string]bool{}
	for _, name := range plan.Verify {
		// Checked now: the node leaves the quarantine either way and
		// starts a fresh one if pods still point at it next pass.
		delete(c.quarantined, name)
		_, err := c.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			gone[name] = true
		case err != nil:
			errs = append(errs, fmt.Errorf("checking node %s: %w", name, err))
		}
	}
	actions := append(plan.Deletes, Orphans(pods, gone, plan.Deletes, now)...)
	errs = append(errs, c.execute(ctx, actions)...)
	return errors.Join(errs...)
}

func (c *Controller) execute(ctx context.Context, actions []Action) []error {
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
		sem  = make(chan struct{}, parallelDeletes)
	)
	for _, a := range actions {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return append(errs, ctx.Err())
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			c.metrics.deleting.WithLabelValues(a.Pod.Namespace, string(a.Reason)).Inc()
			if err := c.forceDelete(ctx, a); err != nil {
				c.metrics.failed.WithLabelValues(a.Pod.Namespace, string(a.Reason)).Inc()
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errs
}

// forceDelete marks the pod Failed (with the action's condition) unless it
// is terminal already, then deletes it with grace period 0 and its UID as
// a precondition, so a newer pod of the same name is never touched.
func (c *Controller) forceDelete(ctx context.Context, a Action) error {
	pod := a.Pod
	key := pod.Namespace + "/" + pod.Name
	slog.Debug("pod-garbage-collector: force deleting pod", "pod", key, "reason", string(a.Reason))
	if a.MarkFailed() {
		patch, err := failedStatusPatch(pod, a.Condition)
		if err != nil {
			return err
		}
		_, err = c.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch,
			metav1.PatchOptions{FieldManager: FieldManager}, "status")
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("marking pod %s failed: %w", key, err)
		}
	}
	uid := pod.UID
	grace := int64(0)
	err := c.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: &grace, Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("force deleting pod %s: %w", key, err)
	}
	return nil
}

// failedStatusPatch is a strategic merge patch of pods/status setting
// phase Failed and merging cond into the conditions (by type); the UID
// makes it fail on a newer pod of the same name.
func failedStatusPatch(pod *corev1.Pod, cond *corev1.PodCondition) ([]byte, error) {
	status := map[string]any{"phase": corev1.PodFailed}
	if cond != nil {
		status["conditions"] = []corev1.PodCondition{*cond}
	}
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": pod.UID},
		"status":   status,
	})
	if err != nil {
		return nil, fmt.Errorf("encoding status patch of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return patch, nil
}
