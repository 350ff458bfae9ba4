package apiserver

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeproof/kubeproof/impl/apiserver/endpoints"
	"github.com/kubeproof/kubeproof/impl/apiserver/request"
	"github.com/kubeproof/kubeproof/impl/kubelet/server/apiproxy"
)

// The kubelet-backed subresources: pods/log, pods/exec, pods/attach,
// pods/portforward and nodes/proxy are
// proxied to the pod's (or the node's) kubelet API by apiproxy, reading
// the pod and node from this server's own stores.

var (
	podsGVR  = corev1.SchemeGroupVersion.WithResource("pods")
	nodesGVR = corev1.SchemeGroupVersion.WithResource("nodes")
)

// newKubeletProxy returns the proxy to kubelets. Without a client TLS
// configuration it connects as kube-apiserver does without
// --kubelet-client-certificate and --kubelet-certificate-authority: no
// client certificate, kubelet serving certificates not verified.
func newKubeletProxy(s *Server, clientTLS *tls.Config) *apiproxy.Proxy {
	if clientTLS == nil {
		clientTLS = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // upstream's default, see above
	}
	return apiproxy.New(storeLookup{s}, clientTLS)
}

// storeLookup reads pods and nodes for the proxy.
type storeLookup struct{ s *Server }

func (l storeLookup) GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	obj, err := l.get(ctx, podsGVR, namespace, name)
	if err != nil {
		return nil, err
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, apierrors.NewInternalError(fmt.Errorf("pods store returned %T", obj))
	}
	return pod, nil
}

func (l storeLookup) GetNode(ctx context.Context, name string) (*corev1.Node, error) {
	return l.node(l.get(ctx, nodesGVR, "", name))
}

// GetCachedNodeRef is the name and uid of the node, a Node holding only
// them, read from any version the watch cache holds (no quorum read;
// possibly stale) without copying the cached node.
func (l storeLookup) GetCachedNodeRef(ctx context.Context, name string) (*corev1.Node, error) {
	h, err := l.handler(nodesGVR, name)
	if err != nil {
		return nil, err
	}
	var ref *corev1.Node
	var wrong runtime.Object
	err = h.ViewCachedObject(ctx, "", name, func(obj runtime.Object) {
		node, ok := obj.(*corev1.Node)
		if !ok {
			wrong = obj
			return
		}
		ref = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node.Name, UID: node.UID}}
	})
	if err != nil {
		return nil, err
	}
	if ref == nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("nodes store returned %T", wrong))
	}
	return ref, nil
}

func (storeLookup) node(obj any, err error) (*corev1.Node, error) {
	if err != nil {
		return nil, err
	}
	node, ok := obj.(*corev1.Node)
	if !ok {
		return nil, apierrors.NewInternalError(fmt.Errorf("nodes store returned %T", obj))
	}
	return node, nil
}

func (l storeLookup) get(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (any, error) {
	h, err := l.handler(gvr, name)
	if err != nil {
		return nil, err
	}
	return h.GetObject(ctx, namespace, name)
}

// handler is the endpoint handler serving gvr; a resource that is not
// served has no object name.
func (l storeLookup) handler(gvr schema.GroupVersionResource, name string) (*endpoints.Handler, error) {
	h, ok := l.s.handlers[gvr]
	if !ok {
		return nil, apierrors.NewNotFound(gvr.GroupResource(), name)
	}
	return h, nil
}

// serveKubeletSubresource serves the request if it is one of the
// kubelet-backed subresources, and reports whether it was.
func (s *Server) serveKubeletSubresource(w http.ResponseWriter, r *http.Request, gv schema.GroupVersion, info *request.Info) bool {
	if s.kubeletProxy == nil || gv != corev1.SchemeGroupVersion || len(info.Parts) < 3 {
		return false
	}
	if info.Resource == "pods" && !info.UnderNamespace {
		// kube-apiserver routes a pod's log, exec, attach and
		// portforward only under its namespace: the pods handler answers
		// its router's 404.
		return false
	}
	gr := schema.GroupResource{Resource: info.Resource + "/" + info.Subresource}
	// The connect subresources (not log, a get) are long-running requests
	// in the metrics while they are open, as kube-apiserver's.
	defer s.requestMetrics.ConnectStarted(r, info)()
	var err error
	switch {
	case info.Resource == "pods" && info.Subresource == "log" && len(info.Parts) == 3:
		if info.RouteVerb() != "get" {
			err = endpoints.MethodNotAllowed()
			break
		}
		if info.Name == "" {
			err = endpoints.NameRequired()
			break
		}
		err = s.kubeletProxy.PodLog(w, r, info.Namespace, info.Name)
	case info.Resource == "pods" && info.Subresource == "exec" && len(info.Parts) == 3:
		if v := info.RouteVerb(); v != "get" && v != "create" {
			err = endpoints.MethodNotAllowed()
			break
		}
		if err = connectDryRunRefused(r); err != nil {
			break
		}
		if info.Name == "" {
			err = endpoints.NameRequired()
			break
		}
		err = s.kubeletProxy.PodExec(w, r, info.Namespace, info.Name)
	case info.Resource == "pods" && info.Subresource == "attach" && len(info.Parts) == 3:
		if v := info.RouteVerb(); v != "get" && v != "create" {
			err = endpoints.MethodNotAllowed()
			break
		}
		if err = connectDryRunRefused(r); err != nil {
			break
		}
		if info.Name == "" {
			err = endpoints.NameRequired()
			break
		}
		err = s.kubeletProxy.PodAttach(w, r, info.Namespace, info.Name)
	case info.Resource == "pods" && info.Subresource == "portforward" && len(info.Parts) == 3:
		if v := info.RouteVerb(); v != "get" && v != "create" {
			err = endpoints.MethodNotAllowed()
			break
		}
		if err = connectDryRunRefused(r); err != nil {
			break
		}
		if info.Name == "" {
			err = endpoints.NameRequired()
			break
		}
		err = s.kubeletProxy.PodPortForward(w, r, info.Namespace, info.Name)
	case info.Resource == "nodes" && info.Subresource == "proxy" && !info.UnderNamespace:
		if err = connectDryRunRefused(r); err != nil {
			break
		}
		if info.Name == "" {
			err = endpoints.NameRequired()
			break
		}
		err = s.kubeletProxy.NodeProxy(w, r, info.Name, strings.Join(info.Parts[3:], "/"))
	default:
		return false
	}
	if err != nil {
		endpoints.WriteError(w, r, s.codecs, err, gr, info.Name)
	}
	return true
}
