package apiserver

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestLegacyTrackingDecision(t *testing.T) {
	now := time.Date(2026, 11, 26, 23, 30, 0, 0, time.FixedZone("UTC-2", -2*3600)) // 2026-11-27 in UTC
	existing := func(data map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: legacyTrackingConfigMap, ResourceVersion: "7"}, Data: data}
	}
	for _, tc := range []struct {
		name string
		cur  *corev1.ConfigMap
		want string // data.since written; "" for no write
	}{
		{name: "missing: created with today's UTC date", want: "2026-11-27"},
		{name: "a date: kept", cur: existing(map[string]string{"since": "2024-01-02"})},
		{name: "not a date: today's", cur: existing(map[string]string{"since": "then", "other": "x"}), want: "2026-11-27"},
		{name: "no data: today's", cur: existing(nil), want: "2026-11-27"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := legacyTrackingDecision(tc.cur, now)
			if tc.want == "" {
				if got != nil {
					t.Fatalf("wrote %+v, want nothing", got)
				}
				return
			}
			if got == nil || got.Data["since"] != tc.want || got.Namespace != "kube-system" || got.Name != legacyTrackingConfigMap {
				t.Fatalf("got %+v, want since %s", got, tc.want)
			}
			if tc.cur != nil && (got.ResourceVersion != "7" || len(got.Data) != len(tc.cur.Data)+boolInt(tc.cur.Data["since"] == "")) {
				t.Errorf("the update is not of the existing object: %+v", got)
			}
		})
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestLegacyTokenTrackingSyncLimits: as kube-apiserver's controller, a
// sync creates the ConfigMap once and then at most once per 30 minutes (a
// deletion soon after is answered when the interval has passed, through
// the queue), a failed creation does not use up the allowance, and a
// malformed since is rewritten whenever seen.
func TestLegacyTokenTrackingSyncLimits(t *testing.T) {
	ctx := context.Background()
	start := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(start)
	client := fake.NewClientset()
	c := newLegacyTokenTracking(client, clk, newLegacyTrackingLimiter(), slog.New(slog.DiscardHandler))
	defer c.queue.ShutDown()
	creates := func() int {
		n := 0
		for _, a := range client.Actions() {
			if a.GetVerb() == "create" && a.GetResource().Resource == "configmaps" {
				n++
			}
		}
		return n
	}

	// A refused creation gives its allowance back.
	refuse := true
	client.PrependReactor("create", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
		if refuse {
			refuse = false
			return true, nil, apierrors.NewInternalError(errors.New("refused for the test"))
		}
		return false, nil, nil
	})
	if err := c.sync(ctx); err == nil {
		t.Fatal("a refused creation synced without error")
	}
	if err := c.sync(ctx); err != nil {
		t.Fatal(err)
	}
	cm, err := client.CoreV1().ConfigMaps("kube-system").Get(ctx, legacyTrackingConfigMap, metav1.GetOptions{})
	if err != nil || cm.Data["since"] != "2026-11-26" {
		t.Fatalf("after the retry: %v %v", cm, err)
	}

	// Deleted at once: not created again before the interval.
	if err := client.CoreV1().ConfigMaps("kube-system").Delete(ctx, legacyTrackingConfigMap, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	clk.Step(29 * time.Minute)
	before := creates()
	if err := c.sync(ctx); err != nil {
		t.Fatal(err)
	}
	if creates() != before {
		t.Fatal("created again within 30 minutes of the last creation")
	}
	if c.queue.Len() != 0 {
		t.Fatalf("queued at once: %d", c.queue.Len())
	}
	// The key comes back when a creation is allowed (a minute later).
	clk.Step(time.Minute)
	deadline := time.Now().Add(10 * time.Second)
	for c.queue.Len() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the key did not come back once a creation was allowed")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := c.sync(ctx); err != nil {
		t.Fatal(err)
	}
	if creates() != before+1 {
		t.Fatal("not created once the interval had passed")
	}

	// A malformed since is rewritten, each time, without a limit.
	for i := range 2 {
		cm, err := client.CoreV1().ConfigMaps("kube-system").Get(ctx, legacyTrackingConfigMap, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.Data["since"] = "garbage"
		if cm, err = client.CoreV1().ConfigMaps("kube-system").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := c.informer.GetIndexer().Add(cm); err != nil {
			t.Fatal(err)
		}
		if err := c.sync(ctx); err != nil {
			t.Fatal(err)
		}
		got, err := client.CoreV1().ConfigMaps("kube-system").Get(ctx, legacyTrackingConfigMap, metav1.GetOptions{})
		if err != nil || got.Data["since"] != "2026-11-26" {
			t.Fatalf("rewrite %d: %v %v", i, got, err)
		}
	}
}
