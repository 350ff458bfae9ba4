package resourcequota_test

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeproof/kubeproof/impl/controller/resourcequota"
)

// TestLagging: a recount may lower a name's usage only from objects
// observed at the quota's revision or later; raising usage, keeping it,
// or a quota whose resourceVersion orders nothing never lags.
func TestLagging(t *testing.T) {
	charged := func(rv string, used map[string]string) *corev1.ResourceQuota {
		q := quota(map[string]string{"pods": "5", "requests.cpu": "2", "count/configmaps": "3"})
		q.ResourceVersion = rv
		q.Status.Hard = q.Spec.Hard.DeepCopy()
		q.Status.Used = list(used)
		return q
	}
	twoPods := []runtime.Object{pod("a", requests(map[string]string{"cpu": "100m"})), pod("b", requests(map[string]string{"cpu": "100m"}))}
	observed := func(pods []runtime.Object, podsAt, configmapsAt uint64) resourcequota.Observed {
		return resourcequota.Observed{
			Objects:   map[schema.GroupResource][]runtime.Object{podResource: pods, configmaps: {}},
			Revisions: map[schema.GroupResource]uint64{podResource: podsAt, configmaps: configmapsAt},
			Now:       now,
		}
	}
	for _, tc := range []struct {
		name string
		q    *corev1.ResourceQuota
		obs  resourcequota.Observed
		want []schema.GroupResource
	}{
		{"charged pods the cache has not seen", charged("20", map[string]string{"pods": "2", "requests.cpu": "200m", "count/configmaps": "0"}),
			observed(nil, 10, 10), []schema.GroupResource{podResource}},
		{"charged pods, a cache at the quota's revision", charged("20", map[string]string{"pods": "2", "requests.cpu": "200m", "count/configmaps": "0"}),
			observed(nil, 20, 10), nil},
		{"charged pods the old cache holds", charged("20", map[string]string{"pods": "2", "requests.cpu": "200m", "count/configmaps": "0"}),
			observed(twoPods, 10, 10), nil},
		{"only one name lower", charged("20", map[string]string{"pods": "2", "requests.cpu": "300m", "count/configmaps": "0"}),
			observed(twoPods, 10, 10), []schema.GroupResource{podResource}},
		{"raised from an old cache", charged("20", map[string]string{"pods": "0", "requests.cpu": "0", "count/configmaps": "0"}),
			observed(twoPods, 0, 0), nil},
		{"configmaps lower, pods not", charged("20", map[string]string{"pods": "2", "requests.cpu": "200m", "count/configmaps": "1"}),
			observed(twoPods, 5, 19), []schema.GroupResource{configmaps}},
		{"both lower, in the order of names", charged("20", map[string]string{"pods": "3", "requests.cpu": "200m", "count/configmaps": "1"}),
			observed(twoPods, 0, 0), []schema.GroupResource{configmaps, podResource}},
		{"no usage yet", charged("20", nil), observed(nil, 0, 0), nil},
		{"a resourceVersion that is not a revision", charged("", map[string]string{"pods": "2", "requests.cpu": "200m", "count/configmaps": "1"}),
			observed(nil, 0, 0), nil},
	} {
		if got := resourcequota.Lagging(tc.q, tc.obs); !slices.Equal(got, tc.want) {
			t.Errorf("%s: lagging %v, want %v", tc.name, got, tc.want)
		}
	}
}
