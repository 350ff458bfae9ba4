package apiserver

import (
	"fmt"
	"time"
)

// LeaveEndpointsOnShutdown makes s stop as a killed server would: without
// removing its lease and its address from the `kubernetes` Endpoints,
// which go when the lease expires. Call it before Run's context ends.
func LeaveEndpointsOnShutdown(s *Server) { s.endpoints.leaveOnShutdown = true }

// LogCheckFrame is how the goroutine flushing s's log check appears in a
// goroutine dump (its run frame with its receiver), to find it among
// other servers' in the same test binary.
func LogCheckFrame(s *Server) string { return fmt.Sprintf("(*logCheck).run(%p", s.health.log) }

// SetBootstrapTimeout makes s's start-up object hooks (the system
// PriorityClasses) give up after d rather than 30 s. Call it before Run.
func SetBootstrapTimeout(s *Server, d time.Duration) {
	for i := range s.bootstraps {
		s.bootstraps[i].timeout = d
	}
}

// SetAPFEnsurePeriod makes s's API Priority and Fairness ensurer run
// again every d after the start rather than every minute. Call it
// before Run.
func SetAPFEnsurePeriod(s *Server, d time.Duration) {
	if s.apf != nil {
		s.apf.ensurePeriod = d
	}
}
