package eviction

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
)

// Manager runs Decide once per monitoring interval and remembers its
// state; the kubelet reads the pressure conditions from it and carries
// out the eviction Decide picks.
type Manager struct {
	cfg      Config
	provider Provider

	mu         sync.Mutex
	state      State
	conditions []v1.NodeConditionType
	reclaimer  NodeReclaimer
}

// NewManager returns a manager observing through provider.
func NewManager(cfg Config, provider Provider) *Manager {
	if cfg.PressureTransitionPeriod == 0 {
		cfg.PressureTransitionPeriod = DefaultPressureTransition
	}
	if cfg.MonitoringInterval <= 0 {
		cfg.MonitoringInterval = DefaultMonitoringInterval
	}
	return &Manager{cfg: cfg, provider: provider}
}

// Config returns the manager's configuration.
func (m *Manager) Config() Config { return m.cfg }

// Provider returns the manager's provider.
func (m *Manager) Provider() Provider {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.provider
}

// SetNodeReclaimer sets what frees node-level resources (dead
// containers, unused images) before pods are evicted for disk; without
// one pods are evicted at once.
func (m *Manager) SetNodeReclaimer(r NodeReclaimer) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reclaimer = r
}

// NodeReclaimer returns the reclaimer set (nil if none).
func (m *Manager) NodeReclaimer() NodeReclaimer {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.reclaimer
}

// Synchronize observes the node running pods, decides, and keeps the new
// state. Pods over a local storage limit are evicted first (Decide).
// When the threshold acted on is a disk signal that node-level
// reclaim helps (ReclaimsNodeLevel), dead containers and unused images go
// first and the node is observed again; the pod is evicted only if that
// did not suffice (ReclaimSuffices). It reports whether the pressure
// conditions changed.
func (m *Manager) Synchronize(ctx context.Context, pods []*v1.Pod, now time.Time) (Decision, bool, error) {
	provider := m.Provider()
	obs, stats, err := provider.Observe(ctx, pods)
	if err != nil {
		return Decision{}, false, fmt.Errorf("eviction manager: %w", err)
	}
	dedicated := false
	if rep, ok := provider.(DedicatedImageFsReporter); ok {
		dedicated = rep.DedicatedImageFs(ctx)
	}
	m.mu.Lock()
	d := Decide(Input{Config: m.cfg, Observations: obs, Pods: stats, State: m.state, Now: now, DedicatedImageFs: dedicated})
	changed := !slices.Equal(d.Conditions, m.conditions)
	m.state, m.conditions = d.State, d.Conditions
	r := m.reclaimer
	m.mu.Unlock()
	if d.Threshold == nil || r == nil {
		return d, changed, nil
	}
	if ReclaimsNodeLevel(d.Threshold.Signal, dedicated) {
		d.Reclaim = m.reclaim(ctx, provider, r, pods, now)
		if d.Reclaim.Sufficed {
			d.Evict = nil
		}
	}
	return d, changed, nil
}

// Conditions are the pressure conditions currently True.
func (m *Manager) Conditions() []v1.NodeConditionType {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.conditions)
}
