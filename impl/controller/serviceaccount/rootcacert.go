package serviceaccount

import (
	"bytes"
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubeproof/kubeproof/impl/controller/workloop"
)

// Root CA ConfigMap, as kube-controller-manager's root-ca-cert-publisher
// writes it.
const (
	RootCAConfigMapName = "kube-root-ca.crt"
	RootCAKey           = "ca.crt"
	descriptionKey      = "kubernetes.io/description"
	description         = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters."
)

// RootCAAction is what the publisher does for one namespace.
type RootCAAction int

// The publisher's actions.
const (
	RootCANothing RootCAAction = iota
	RootCACreate
	RootCAUpdate
)

// DecideRootCA is the publisher's decision for a namespace whose cached
// ConfigMap is cm (nil when missing): create it, bring its ca.crt and
// description back to ca, or leave it. The returned ConfigMap is what to
// write.
func DecideRootCA(ns *corev1.Namespace, cm *corev1.ConfigMap, ca []byte) (RootCAAction, *corev1.ConfigMap) {
	if ns == nil || ns.DeletionTimestamp != nil || ns.Status.Phase == corev1.NamespaceTerminating {
		return RootCANothing, nil
	}
	if cm == nil {
		return RootCACreate, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: RootCAConfigMapName, Namespace: ns.Name, Annotations: map[string]string{descriptionKey: description}},
			Data:       map[string]string{RootCAKey: string(ca)},
		}
	}
	if cm.Data[RootCAKey] == string(ca) && len(cm.Data) == 1 && cm.Annotations[descriptionKey] == description {
		return RootCANothing, nil
	}
	next := cm.DeepCopy()
	next.Data = map[string]string{RootCAKey: string(ca)}
	if next.Annotations == nil {
		next.Annotations = map[string]string{}
	}
	next.Annotations[descriptionKey] = description
	return RootCAUpdate, next
}

// RootCAPublisher is the root CA certificate publisher.
type RootCAPublisher struct {
	client kubernetes.Interface
	ca     []byte
	nsList corelisters.NamespaceLister
	cmList corelisters.ConfigMapLister
	synced []cache.InformerSynced
	queue  workqueue.TypedRateLimitingInterface[string]
}

// RootCAConfigMapInformer is a ConfigMap informer that watches only the
// kube-root-ca.crt ConfigMaps of every namespace.
func RootCAConfigMapInformer(client kubernetes.Interface) informers.SharedInformerFactory {
	return informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", RootCAConfigMapName).String()
	}))
}

// NewRootCAPublisher wires the publisher of ca (PEM) to its informers.
func NewRootCAPublisher(client kubernetes.Interface, ca []byte, nsInformer coreinformers.NamespaceInformer, cmInformer coreinformers.ConfigMapInformer) (*RootCAPublisher, error) {
	if len(bytes.TrimSpace(ca)) == 0 {
		return nil, fmt.Errorf("root CA publisher: no CA bundle given")
	}
	c := &RootCAPublisher{
		client: client, ca: ca,
		nsList: nsInformer.Lister(), cmList: cmInformer.Lister(),
		synced: []cache.InformerSynced{nsInformer.Informer().HasSynced, cmInformer.Informer().HasSynced},
		queue:  workloop.NewQueue("root_ca_cert_publisher"),
	}
	_, _ = nsInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.enqueue(obj) },
		UpdateFunc: func(_, obj any) { c.enqueue(obj) },
	})
	_, _ = cmInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj any) { c.enqueue(obj) },
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			c.enqueue(obj)
		},
	})
	return c, nil
}

func (c *RootCAPublisher) enqueue(obj any) {
	switch o := obj.(type) {
	case *corev1.Namespace:
		c.queue.Add(o.Name)
	case *corev1.ConfigMap:
		if o.Name == RootCAConfigMapName {
			c.queue.Add(o.Namespace)
		}
	}
}

// Run runs workers until ctx is done.
func (c *RootCAPublisher) Run(ctx context.Context, workers int) error {
	if err := workloop.WaitForSync(ctx, "root CA certificate publisher", c.queue, c.synced...); err != nil {
		return err
	}
	workloop.Run(ctx, "root_ca_cert_publisher", c.queue, workers, c.sync)
	return nil
}

func (c *RootCAPublisher) sync(ctx context.Context, namespace string) error {
	ns, err := c.nsList.Get(namespace)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	cm, err := c.cmList.ConfigMaps(namespace).Get(RootCAConfigMapName)
	if apierrors.IsNotFound(err) {
		cm, err = nil, nil
	}
	if err != nil {
		return err
	}
	action, want := DecideRootCA(ns, cm, c.ca)
	switch action {
	case RootCACreate:
		_, err = c.client.CoreV1().ConfigMaps(namespace).Create(ctx, want, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) || (apierrors.IsForbidden(err) && apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause)) {
			err = nil
		}
	case RootCAUpdate:
		_, err = c.client.CoreV1().ConfigMaps(namespace).Update(ctx, want, metav1.UpdateOptions{})
		if apierrors.IsNotFound(err) {
			err = nil // deleted meanwhile: the delete event brings it back
		}
	}
	if err != nil {
		return fmt.Errorf("publishing %s in %s: %w", RootCAConfigMapName, namespace, err)
	}
	return nil
}
