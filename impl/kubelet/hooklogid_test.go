package kubelet

import (
	"log/slog"
	"regexp"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// TestHookFailureLogsTypedContainerID: the kubelet's error logs for a
// failed postStart hook ("Failed to execute PostStartHook") and a failed
// preStop hook ("PreStop hook failed") name the container as upstream's
// kuberuntime does, by its runtime-typed ID "type://id" (here the
// simulated runtime's type, sim), the form the pod status's containerID
// has. Before, the ID was logged bare.
func TestHookFailureLogsTypedContainerID(t *testing.T) {
	for _, tc := range []struct {
		name, msg string
		hook      func(*v1.Lifecycle)
		del       bool
	}{
		{"poststart", "Failed to execute PostStartHook", func(l *v1.Lifecycle) {
			l.PostStart = &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"false"}}}
		}, false},
		{"prestop", "PreStop hook failed", func(l *v1.Lifecycle) {
			l.PreStop = &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"false"}}}
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf syncBuffer
			h := newHarness(t, func(c *Config) {
				c.Logger = slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelError}))
			})
			p := h.create(h.pod("hooked", func(p *v1.Pod) {
				p.Spec.Containers[0].Lifecycle = &v1.Lifecycle{}
				tc.hook(p.Spec.Containers[0].Lifecycle)
			}))
			h.sync(p)
			if tc.del {
				deletePod(t, h, p, 30)
				h.sync(p)
			}
			re := regexp.MustCompile(`level=ERROR msg="` + tc.msg + `" .*containerID=(\S+)`)
			m := re.FindStringSubmatch(buf.String())
			if m == nil {
				t.Fatalf("log %q, want %q with a containerID", buf.String(), tc.msg)
			}
			if !regexp.MustCompile(`^sim://\S+$`).MatchString(m[1]) {
				t.Errorf("%s logged containerID=%s, want sim://<id> as upstream's type://id", tc.msg, m[1])
			}
		})
	}
}
