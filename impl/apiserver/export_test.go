package apiserver

import "fmt"

// LeaveEndpointsOnShutdown makes s stop as a killed server would: without
// removing its lease and its address from the `kubernetes` Endpoints,
// which go when the lease expires. Call it before Run's context ends.
func LeaveEndpointsOnShutdown(s *Server) { s.endpoints.leaveOnShutdown = true }

// LogCheckFrame is how the goroutine flushing s's log check appears in a
// goroutine dump (its run frame with its receiver), to find it among
// other servers' in the same test binary.
func LogCheckFrame(s *Server) string { return fmt.Sprintf("(*logCheck).run(%p", s.health.log) }
