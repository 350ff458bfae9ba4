// The methods of kubernetes.Interface (client-go v0.37.2) other than the
// two a node's clientset builds at once (nodeclientset.go): each builds the
// full clientset on first use. Listed from client-go's Interface; the
// assertion below fails to compile when a client-go update adds a group.

package cluster

import (
	discovery "k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	admissionregistrationv1 "k8s.io/client-go/kubernetes/typed/admissionregistration/v1"
	admissionregistrationv1alpha1 "k8s.io/client-go/kubernetes/typed/admissionregistration/v1alpha1"
	admissionregistrationv1beta1 "k8s.io/client-go/kubernetes/typed/admissionregistration/v1beta1"
	internalv1alpha1 "k8s.io/client-go/kubernetes/typed/apiserverinternal/v1alpha1"
	appsv1 "k8s.io/client-go/kubernetes/typed/apps/v1"
	appsv1beta1 "k8s.io/client-go/kubernetes/typed/apps/v1beta1"
	appsv1beta2 "k8s.io/client-go/kubernetes/typed/apps/v1beta2"
	authenticationv1 "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authenticationv1alpha1 "k8s.io/client-go/kubernetes/typed/authentication/v1alpha1"
	authenticationv1beta1 "k8s.io/client-go/kubernetes/typed/authentication/v1beta1"
	authorizationv1 "k8s.io/client-go/kubernetes/typed/authorization/v1"
	authorizationv1beta1 "k8s.io/client-go/kubernetes/typed/authorization/v1beta1"
	autoscalingv1 "k8s.io/client-go/kubernetes/typed/autoscaling/v1"
	autoscalingv2 "k8s.io/client-go/kubernetes/typed/autoscaling/v2"
	batchv1 "k8s.io/client-go/kubernetes/typed/batch/v1"
	batchv1beta1 "k8s.io/client-go/kubernetes/typed/batch/v1beta1"
	certificatesv1 "k8s.io/client-go/kubernetes/typed/certificates/v1"
	certificatesv1alpha1 "k8s.io/client-go/kubernetes/typed/certificates/v1alpha1"
	certificatesv1beta1 "k8s.io/client-go/kubernetes/typed/certificates/v1beta1"
	coordinationv1alpha2 "k8s.io/client-go/kubernetes/typed/coordination/v1alpha2"
	coordinationv1beta1 "k8s.io/client-go/kubernetes/typed/coordination/v1beta1"
	discoveryv1 "k8s.io/client-go/kubernetes/typed/discovery/v1"
	discoveryv1beta1 "k8s.io/client-go/kubernetes/typed/discovery/v1beta1"
	eventsv1 "k8s.io/client-go/kubernetes/typed/events/v1"
	eventsv1beta1 "k8s.io/client-go/kubernetes/typed/events/v1beta1"
	extensionsv1beta1 "k8s.io/client-go/kubernetes/typed/extensions/v1beta1"
	flowcontrolv1 "k8s.io/client-go/kubernetes/typed/flowcontrol/v1"
	flowcontrolv1beta1 "k8s.io/client-go/kubernetes/typed/flowcontrol/v1beta1"
	flowcontrolv1beta2 "k8s.io/client-go/kubernetes/typed/flowcontrol/v1beta2"
	flowcontrolv1beta3 "k8s.io/client-go/kubernetes/typed/flowcontrol/v1beta3"
	lifecyclev1alpha1 "k8s.io/client-go/kubernetes/typed/lifecycle/v1alpha1"
	networkingv1 "k8s.io/client-go/kubernetes/typed/networking/v1"
	networkingv1beta1 "k8s.io/client-go/kubernetes/typed/networking/v1beta1"
	nodev1 "k8s.io/client-go/kubernetes/typed/node/v1"
	nodev1alpha1 "k8s.io/client-go/kubernetes/typed/node/v1alpha1"
	nodev1beta1 "k8s.io/client-go/kubernetes/typed/node/v1beta1"
	policyv1 "k8s.io/client-go/kubernetes/typed/policy/v1"
	policyv1beta1 "k8s.io/client-go/kubernetes/typed/policy/v1beta1"
	rbacv1 "k8s.io/client-go/kubernetes/typed/rbac/v1"
	rbacv1alpha1 "k8s.io/client-go/kubernetes/typed/rbac/v1alpha1"
	rbacv1beta1 "k8s.io/client-go/kubernetes/typed/rbac/v1beta1"
	resourcev1 "k8s.io/client-go/kubernetes/typed/resource/v1"
	resourcev1alpha3 "k8s.io/client-go/kubernetes/typed/resource/v1alpha3"
	resourcev1beta1 "k8s.io/client-go/kubernetes/typed/resource/v1beta1"
	resourcev1beta2 "k8s.io/client-go/kubernetes/typed/resource/v1beta2"
	schedulingv1 "k8s.io/client-go/kubernetes/typed/scheduling/v1"
	schedulingv1alpha3 "k8s.io/client-go/kubernetes/typed/scheduling/v1alpha3"
	schedulingv1beta1 "k8s.io/client-go/kubernetes/typed/scheduling/v1beta1"
	storagev1 "k8s.io/client-go/kubernetes/typed/storage/v1"
	storagev1alpha1 "k8s.io/client-go/kubernetes/typed/storage/v1alpha1"
	storagev1beta1 "k8s.io/client-go/kubernetes/typed/storage/v1beta1"
	storagemigrationv1 "k8s.io/client-go/kubernetes/typed/storagemigration/v1"
	storagemigrationv1beta1 "k8s.io/client-go/kubernetes/typed/storagemigration/v1beta1"
)

var _ kubernetes.Interface = (*nodeClientset)(nil)

func (c *nodeClientset) Discovery() discovery.DiscoveryInterfaces { return c.full().Discovery() }
func (c *nodeClientset) AdmissionregistrationV1() admissionregistrationv1.AdmissionregistrationV1Interface {
	return c.full().AdmissionregistrationV1()
}
func (c *nodeClientset) AdmissionregistrationV1alpha1() admissionregistrationv1alpha1.AdmissionregistrationV1alpha1Interface {
	return c.full().AdmissionregistrationV1alpha1()
}
func (c *nodeClientset) AdmissionregistrationV1beta1() admissionregistrationv1beta1.AdmissionregistrationV1beta1Interface {
	return c.full().AdmissionregistrationV1beta1()
}
func (c *nodeClientset) InternalV1alpha1() internalv1alpha1.InternalV1alpha1Interface {
	return c.full().InternalV1alpha1()
}
func (c *nodeClientset) AppsV1() appsv1.AppsV1Interface                { return c.full().AppsV1() }
func (c *nodeClientset) AppsV1beta1() appsv1beta1.AppsV1beta1Interface { return c.full().AppsV1beta1() }
func (c *nodeClientset) AppsV1beta2() appsv1beta2.AppsV1beta2Interface { return c.full().AppsV1beta2() }
func (c *nodeClientset) AuthenticationV1() authenticationv1.AuthenticationV1Interface {
	return c.full().AuthenticationV1()
}
func (c *nodeClientset) AuthenticationV1alpha1() authenticationv1alpha1.AuthenticationV1alpha1Interface {
	return c.full().AuthenticationV1alpha1()
}
func (c *nodeClientset) AuthenticationV1beta1() authenticationv1beta1.AuthenticationV1beta1Interface {
	return c.full().AuthenticationV1beta1()
}
func (c *nodeClientset) AuthorizationV1() authorizationv1.AuthorizationV1Interface {
	return c.full().AuthorizationV1()
}
func (c *nodeClientset) AuthorizationV1beta1() authorizationv1beta1.AuthorizationV1beta1Interface {
	return c.full().AuthorizationV1beta1()
}
func (c *nodeClientset) AutoscalingV1() autoscalingv1.AutoscalingV1Interface {
	return c.full().AutoscalingV1()
}
func (c *nodeClientset) AutoscalingV2() autoscalingv2.AutoscalingV2Interface {
	return c.full().AutoscalingV2()
}
func (c *nodeClientset) BatchV1() batchv1.BatchV1Interface { return c.full().BatchV1() }
func (c *nodeClientset) BatchV1beta1() batchv1beta1.BatchV1beta1Interface {
	return c.full().BatchV1beta1()
}
func (c *nodeClientset) CertificatesV1() certificatesv1.CertificatesV1Interface {
	return c.full().CertificatesV1()
}
func (c *nodeClientset) CertificatesV1beta1() certificatesv1beta1.CertificatesV1beta1Interface {
	return c.full().CertificatesV1beta1()
}
func (c *nodeClientset) CertificatesV1alpha1() certificatesv1alpha1.CertificatesV1alpha1Interface {
	return c.full().CertificatesV1alpha1()
}
func (c *nodeClientset) CoordinationV1alpha2() coordinationv1alpha2.CoordinationV1alpha2Interface {
	return c.full().CoordinationV1alpha2()
}
func (c *nodeClientset) CoordinationV1beta1() coordinationv1beta1.CoordinationV1beta1Interface {
	return c.full().CoordinationV1beta1()
}
func (c *nodeClientset) DiscoveryV1() discoveryv1.DiscoveryV1Interface { return c.full().DiscoveryV1() }
func (c *nodeClientset) DiscoveryV1beta1() discoveryv1beta1.DiscoveryV1beta1Interface {
	return c.full().DiscoveryV1beta1()
}
func (c *nodeClientset) EventsV1() eventsv1.EventsV1Interface { return c.full().EventsV1() }
func (c *nodeClientset) EventsV1beta1() eventsv1beta1.EventsV1beta1Interface {
	return c.full().EventsV1beta1()
}
func (c *nodeClientset) ExtensionsV1beta1() extensionsv1beta1.ExtensionsV1beta1Interface {
	return c.full().ExtensionsV1beta1()
}
func (c *nodeClientset) FlowcontrolV1() flowcontrolv1.FlowcontrolV1Interface {
	return c.full().FlowcontrolV1()
}
func (c *nodeClientset) FlowcontrolV1beta1() flowcontrolv1beta1.FlowcontrolV1beta1Interface {
	return c.full().FlowcontrolV1beta1()
}
func (c *nodeClientset) FlowcontrolV1beta2() flowcontrolv1beta2.FlowcontrolV1beta2Interface {
	return c.full().FlowcontrolV1beta2()
}
func (c *nodeClientset) FlowcontrolV1beta3() flowcontrolv1beta3.FlowcontrolV1beta3Interface {
	return c.full().FlowcontrolV1beta3()
}
func (c *nodeClientset) LifecycleV1alpha1() lifecyclev1alpha1.LifecycleV1alpha1Interface {
	return c.full().LifecycleV1alpha1()
}
func (c *nodeClientset) NetworkingV1() networkingv1.NetworkingV1Interface {
	return c.full().NetworkingV1()
}
func (c *nodeClientset) NetworkingV1beta1() networkingv1beta1.NetworkingV1beta1Interface {
	return c.full().NetworkingV1beta1()
}
func (c *nodeClientset) NodeV1() nodev1.NodeV1Interface { return c.full().NodeV1() }
func (c *nodeClientset) NodeV1alpha1() nodev1alpha1.NodeV1alpha1Interface {
	return c.full().NodeV1alpha1()
}
func (c *nodeClientset) NodeV1beta1() nodev1beta1.NodeV1beta1Interface { return c.full().NodeV1beta1() }
func (c *nodeClientset) PolicyV1() policyv1.PolicyV1Interface          { return c.full().PolicyV1() }
func (c *nodeClientset) PolicyV1beta1() policyv1beta1.PolicyV1beta1Interface {
	return c.full().PolicyV1beta1()
}
func (c *nodeClientset) RbacV1() rbacv1.RbacV1Interface                { return c.full().RbacV1() }
func (c *nodeClientset) RbacV1beta1() rbacv1beta1.RbacV1beta1Interface { return c.full().RbacV1beta1() }
func (c *nodeClientset) RbacV1alpha1() rbacv1alpha1.RbacV1alpha1Interface {
	return c.full().RbacV1alpha1()
}
func (c *nodeClientset) ResourceV1() resourcev1.ResourceV1Interface { return c.full().ResourceV1() }
func (c *nodeClientset) ResourceV1beta2() resourcev1beta2.ResourceV1beta2Interface {
	return c.full().ResourceV1beta2()
}
func (c *nodeClientset) ResourceV1beta1() resourcev1beta1.ResourceV1beta1Interface {
	return c.full().ResourceV1beta1()
}
func (c *nodeClientset) ResourceV1alpha3() resourcev1alpha3.ResourceV1alpha3Interface {
	return c.full().ResourceV1alpha3()
}
func (c *nodeClientset) SchedulingV1alpha3() schedulingv1alpha3.SchedulingV1alpha3Interface {
	return c.full().SchedulingV1alpha3()
}
func (c *nodeClientset) SchedulingV1beta1() schedulingv1beta1.SchedulingV1beta1Interface {
	return c.full().SchedulingV1beta1()
}
func (c *nodeClientset) SchedulingV1() schedulingv1.SchedulingV1Interface {
	return c.full().SchedulingV1()
}
func (c *nodeClientset) StorageV1beta1() storagev1beta1.StorageV1beta1Interface {
	return c.full().StorageV1beta1()
}
func (c *nodeClientset) StorageV1() storagev1.StorageV1Interface { return c.full().StorageV1() }
func (c *nodeClientset) StorageV1alpha1() storagev1alpha1.StorageV1alpha1Interface {
	return c.full().StorageV1alpha1()
}
func (c *nodeClientset) StoragemigrationV1() storagemigrationv1.StoragemigrationV1Interface {
	return c.full().StoragemigrationV1()
}
func (c *nodeClientset) StoragemigrationV1beta1() storagemigrationv1beta1.StoragemigrationV1beta1Interface {
	return c.full().StoragemigrationV1beta1()
}
