package namespace

import (
	"testing"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes/fake"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDbg(t *testing.T) {
	client := fake.NewClientset()
	client.Resources = []*metav1.APIResourceList{{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "pods", Namespaced: true, Kind: "Pod", Verbs: []string{"list", "delete"}}}}}
	l, err := discovery.ServerPreferredNamespacedResources(client.Discovery())
	t.Logf("%v %v", l, err)
}
