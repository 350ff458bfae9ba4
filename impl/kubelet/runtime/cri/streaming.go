package cri

import (
	"context"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// GetExec asks the runtime to prepare an exec session (CRI Exec) and
// returns the URL of the runtime's streaming server the client's
// connection is to be proxied to (the kubelet API's
// IndirectStreamingRuntime).
func (r *Runtime) GetExec(ctx context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	resp, err := r.rs.Exec(ctx, req)
	if err != nil {
		return nil, wrap("exec in container "+req.GetContainerId(), err)
	}
	return resp, nil
}

// GetAttach is GetExec for attaching to a container's stdio (CRI Attach).
func (r *Runtime) GetAttach(ctx context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	resp, err := r.rs.Attach(ctx, req)
	if err != nil {
		return nil, wrap("attach to container "+req.GetContainerId(), err)
	}
	return resp, nil
}
