package apiserver

// LeaveEndpointsOnShutdown makes s stop as a killed server would: without
// removing its lease and its address from the `kubernetes` Endpoints,
// which go when the lease expires. Call it before Run's context ends.
func LeaveEndpointsOnShutdown(s *Server) { s.endpoints.leaveOnShutdown = true }
