package apiserver

import (
	"context"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver/request"
	"github.com/kubeproof/kubeproof/impl/registry/ipallocator"
)

var eventsGVR = corev1.SchemeGroupVersion.WithResource("events")

// newServiceRepairer is the repairer of the ClusterIP and NodePort
// allocation records (ipallocator.Repairer), reporting what it finds as
// Warning events on the services; ctx bounds the events' writes.
func (s *Server) newServiceRepairer(ctx context.Context) *ipallocator.Repairer {
	host, _ := os.Hostname()
	return ipallocator.NewRepairer(s.services.store, s.services.prefix, func(f ipallocator.Finding) {
		s.log.Warn("service allocation repair", "service", f.Service.String(), "reason", f.Reason, "message", f.Message)
		if err := s.recordRepairEvent(ctx, f, host); err != nil {
			s.log.Debug("recording a service allocation repair event", "err", err)
		}
	})
}

// repairServicesOnce makes one repair pass and reports whether it
// succeeded; the first success marks the start-service-ip-repair-controllers
// hook done: kube-apiserver's hook waits for both repair controllers' first
// successful pass, its health check failing until then.
func (s *Server) repairServicesOnce(ctx context.Context, rp *ipallocator.Repairer) bool {
	if err := rp.RunOnce(ctx); err != nil {
		if ctx.Err() == nil {
			s.log.Warn("repairing service allocations", "err", err)
		}
		return false
	}
	s.health.hookDone(hookServiceIPRepair)
	return true
}

// runServiceRepair checks the ClusterIP and NodePort allocation records
// against the services every ServiceRepairInterval until ctx ends, as
// kube-apiserver's repair controllers; a pass is made at once unless
// started (the first pass already succeeded).
func (s *Server) runServiceRepair(ctx context.Context, rp *ipallocator.Repairer, started bool) {
	interval := s.cfg.ServiceRepairInterval
	if interval <= 0 {
		interval = ipallocator.DefaultRepairInterval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if !started {
			s.repairServicesOnce(ctx, rp)
		}
		started = false
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// recordRepairEvent writes f as a Warning event on its service, as the
// events.k8s.io recorder of kube-apiserver's repair controllers does
// (reporting controller ipallocator-repair-controller or
// portallocator-repair-controller, instance CONTROLLER-HOSTNAME).
func (s *Server) recordRepairEvent(ctx context.Context, f ipallocator.Finding, host string) error {
	h, ok := s.handlers[eventsGVR]
	if !ok {
		return nil
	}
	now := time.Now()
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.Service.Namespace, Name: fmt.Sprintf("%s.%x", f.Service.Name, now.UnixNano())},
		InvolvedObject: corev1.ObjectReference{Kind: "Service", APIVersion: "v1",
			Namespace: f.Service.Namespace, Name: f.Service.Name, UID: f.ServiceUID},
		Reason: f.Reason, Message: f.Message, Type: corev1.EventTypeWarning, Action: f.Action,
		EventTime:           metav1.NewMicroTime(now),
		ReportingController: f.Controller, ReportingInstance: f.Controller + "-" + host,
	}
	info := &request.Info{IsResourceRequest: true, Verb: "create", APIVersion: "v1", Resource: "events", Namespace: f.Service.Namespace}
	if _, err := h.CreateObject(ctx, info, ev, false); err != nil {
		return fmt.Errorf("creating event %s/%s: %w", ev.Namespace, ev.Name, err)
	}
	return nil
}
