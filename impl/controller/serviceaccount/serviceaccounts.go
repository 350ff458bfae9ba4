// Package serviceaccount holds kube-controller-manager's service account
// controllers:
//
//   - ServiceAccounts keeps a "default" ServiceAccount in every active
//     namespace (re-created if deleted), so pods that name no service
//     account can be admitted.
//   - RootCAPublisher keeps a "kube-root-ca.crt" ConfigMap in every
//     active namespace whose ca.crt is the cluster's CA bundle, the file a
//     pod's projected kube-api-access volume mounts.
//   - Tokens ("serviceaccount-token") fills kubernetes.io/service-account-token
//     Secrets with a legacy token, the namespace and the CA, and deletes
//     them once their service account is gone (tokens.go).
//   - LegacyTokenCleaner ("legacy-service-account-token-cleaner") labels
//     auto-generated token Secrets no pod mounts and no one used for a
//     clean-up period kubernetes.io/legacy-token-invalid-since, and
//     deletes them a period later (legacycleaner.go); it runs once a day
//     rather than from a queue.
//
// All follow the sample-controller shape: informers enqueue keys, workers
// call one idempotent sync whose decision (Decide*) is a pure function of
// the cached objects.
//
// Wiring (controller manager):
//
//	sa := serviceaccount.NewServiceAccounts(client, informers.Core().V1().Namespaces(), informers.Core().V1().ServiceAccounts())
//	ca := serviceaccount.NewRootCAPublisher(client, caPEM, informers.Core().V1().Namespaces(), rootCAConfigMapInformer)
//	go sa.Run(ctx, workers); go ca.Run(ctx, workers)
//
// rootCAConfigMapInformer should watch only ConfigMaps named
// kube-root-ca.crt (RootCAConfigMapInformer builds one).
package serviceaccount

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubeproof/kubeproof/impl/controller/workloop"
)

// DefaultServiceAccount is the account every namespace gets.
const DefaultServiceAccount = "default"

// DecideServiceAccounts is the service accounts controller's decision: the
// accounts to create in ns, given which names exist there. Namespaces
// being deleted get none (creates there are refused anyway).
func DecideServiceAccounts(ns *corev1.Namespace, exists func(name string) bool) []*corev1.ServiceAccount {
	if ns == nil || ns.DeletionTimestamp != nil || ns.Status.Phase == corev1.NamespaceTerminating {
		return nil
	}
	if exists(DefaultServiceAccount) {
		return nil
	}
	return []*corev1.ServiceAccount{{ObjectMeta: metav1.ObjectMeta{Name: DefaultServiceAccount, Namespace: ns.Name}}}
}

// ServiceAccounts is the service accounts controller.
type ServiceAccounts struct {
	client kubernetes.Interface
	nsList corelisters.NamespaceLister
	saList corelisters.ServiceAccountLister
	synced []cache.InformerSynced
	queue  workqueue.TypedRateLimitingInterface[string]
}

// NewServiceAccounts wires the controller to its informers.
func NewServiceAccounts(client kubernetes.Interface, nsInformer coreinformers.NamespaceInformer, saInformer coreinformers.ServiceAccountInformer) *ServiceAccounts {
	c := &ServiceAccounts{
		client: client,
		nsList: nsInformer.Lister(), saList: saInformer.Lister(),
		synced: []cache.InformerSynced{nsInformer.Informer().HasSynced, saInformer.Informer().HasSynced},
		queue:  workloop.NewQueue("serviceaccount"),
	}
	_, _ = nsInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.enqueueNamespace(obj) },
		UpdateFunc: func(_, obj any) { c.enqueueNamespace(obj) },
	})
	_, _ = saInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if sa, ok := obj.(*corev1.ServiceAccount); ok && sa.Name == DefaultServiceAccount {
				c.queue.Add(sa.Namespace)
			}
		},
	})
	return c
}

func (c *ServiceAccounts) enqueueNamespace(obj any) {
	if ns, ok := obj.(*corev1.Namespace); ok {
		c.queue.Add(ns.Name)
	}
}

// Run runs workers until ctx is done.
func (c *ServiceAccounts) Run(ctx context.Context, workers int) error {
	if err := workloop.WaitForSync(ctx, "service account controller", c.queue, c.synced...); err != nil {
		return err
	}
	workloop.Run(ctx, "serviceaccount", c.queue, workers, c.sync)
	return nil
}

func (c *ServiceAccounts) sync(ctx context.Context, namespace string) error {
	ns, err := c.nsList.Get(namespace)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	exists := func(name string) bool {
		_, err := c.saList.ServiceAccounts(namespace).Get(name)
		return err == nil
	}
	for _, sa := range DecideServiceAccounts(ns, exists) {
		_, err := c.client.CoreV1().ServiceAccounts(namespace).Create(ctx, sa, metav1.CreateOptions{})
		switch {
		case err == nil, apierrors.IsAlreadyExists(err):
		case apierrors.IsForbidden(err) && apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
			// The namespace went away meanwhile.
		default:
			return fmt.Errorf("creating service account %s/%s: %w", namespace, sa.Name, err)
		}
	}
	return nil
}
