package apiserver

import (
	"context"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/registry/ipallocator"
)

var eventsV1GVR = eventsv1.SchemeGroupVersion.WithResource("events")

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
// kube-apiserver's repair controllers. succeeded says whether a pass
// already succeeded; until one has, passes are retried after
// repairRetryDelay, not the interval: the hook's check keeps /readyz and
// /livez failing until then, and an etcd hiccup on the first pass would
// otherwise leave the server unready for the whole interval (three
// minutes by default, where kube-apiserver stops after one minute).
func (s *Server) runServiceRepair(ctx context.Context, rp *ipallocator.Repairer, succeeded bool) {
	interval := s.cfg.ServiceRepairInterval
	if interval <= 0 {
		interval = ipallocator.DefaultRepairInterval
	}
	t := time.NewTimer(repairRetryDelay(interval, succeeded, 0))
	defer t.Stop()
	for failures := 0; ; {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if s.repairServicesOnce(ctx, rp) {
			succeeded = true
		} else {
			failures++
		}
		t.Reset(repairRetryDelay(interval, succeeded, failures))
	}
}

// repairRetryDelay is how long the repair loop waits before its next pass:
// the interval once a pass has succeeded; before that 100 ms doubling per
// failed pass up to five seconds (never more than the interval). Pure.
func repairRetryDelay(interval time.Duration, succeeded bool, failures int) time.Duration {
	if succeeded {
		return interval
	}
	d := 100 * time.Millisecond
	for range failures {
		if d *= 2; d >= 5*time.Second {
			d = 5 * time.Second
			break
		}
	}
	return min(d, interval)
}

// recordRepairEvent writes f as a Warning event on its service, as the
// events.k8s.io recorder of kube-apiserver's repair controllers does: an
// events.k8s.io/v1 Event created through the server's loopback client
// (so authenticated as system:apiserver, admitted, audited, and recorded
// in managedFields under kube-apiserver), reporting controller
// ipallocator-repair-controller or portallocator-repair-controller,
// instance CONTROLLER-HOSTNAME, named as the recorder names events.
func (s *Server) recordRepairEvent(ctx context.Context, f ipallocator.Finding, host string) error {
	if _, ok := s.handlers[eventsV1GVR]; !ok {
		return nil
	}
	ev := repairEvent(f, host, time.Now())
	if _, err := s.self.typed.EventsV1().Events(ev.Namespace).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating event %s/%s: %w", ev.Namespace, ev.Name, err)
	}
	return nil
}

// repairEvent is the event reporting f at now. Pure.
func repairEvent(f ipallocator.Finding, host string, now time.Time) *eventsv1.Event {
	return &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.Service.Namespace, Name: fmt.Sprintf("%s.%x", f.Service.Name, now.UnixNano())},
		Regarding: corev1.ObjectReference{Kind: "Service", APIVersion: "v1",
			Namespace: f.Service.Namespace, Name: f.Service.Name, UID: f.ServiceUID},
		Reason: f.Reason, Note: f.Message, Type: corev1.EventTypeWarning, Action: f.Action,
		EventTime:           metav1.NewMicroTime(now),
		ReportingController: f.Controller, ReportingInstance: f.Controller + "-" + host,
	}
}
