package apiserver

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/storage"
)

// getNamespace reads a namespace for admission; fresh asks for a quorum
// read, otherwise any cached state is good enough.
func (s *Server) getNamespace(ctx context.Context, name string, fresh bool) (*corev1.Namespace, error) {
	if !fresh && s.nsCache != nil {
		if ns, ok := s.nsCache.get(name); ok {
			return ns, nil
		}
	}
	rv := "0"
	if fresh {
		rv = ""
	}
	ns := &corev1.Namespace{}
	if err := s.nsStore.Get(ctx, "/namespaces/"+name, storage.GetOptions{ResourceVersion: rv}, ns); err != nil {
		if storage.IsNotFound(err) {
			return nil, apierrors.NewNotFound(corev1.Resource("namespaces"), name)
		}
		return nil, err
	}
	return ns, nil
}

// EnsureSystemNamespaces creates default, kube-system, kube-public and
// kube-node-lease when missing, retrying until storage answers or ctx
// ends. Run calls it before serving. As kube-apiserver's system
// namespaces controller, it reads the server's own state and creates a
// missing namespace through the loopback client (in process: audited,
// and recorded in managedFields under kube-apiserver).
func (s *Server) EnsureSystemNamespaces(ctx context.Context) error {
	if s.nsHandler == nil {
		return nil
	}
	for _, name := range SystemNamespaces {
		for attempt := 0; ; attempt++ {
			_, err := s.getNamespace(ctx, name, true)
			if err == nil {
				break
			}
			if apierrors.IsNotFound(err) {
				ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
				_, err = s.self.typed.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
				if err == nil || apierrors.IsAlreadyExists(err) {
					break
				}
			}
			s.log.Debug("creating system namespace", "namespace", name, "attempt", attempt, "err", err)
			select {
			case <-ctx.Done():
				return fmt.Errorf("apiserver: creating namespace %s: %w", name, err)
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	return nil
}
