package config

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	c, err := Parse([]byte(`
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
percentageOfNodesToScore: 30
leaderElection:
  leaderElect: false
profiles:
- schedulerName: default-scheduler
- schedulerName: bin-packer
  plugins:
    score:
      disabled:
      - name: NodeResourcesBalancedAllocation
      enabled:
      - name: NodeResourcesFit
        weight: 3
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
`))
	if err != nil {
		t.Fatal(err)
	}
	if *c.PercentageOfNodesToScore != 30 || *c.LeaderElection.LeaderElect || len(c.Profiles) != 2 {
		t.Fatalf("parsed %+v", c)
	}
	p := c.Profiles[1]
	if p.SchedulerName != "bin-packer" || *p.Plugins.Score.Enabled[0].Weight != 3 || !strings.Contains(string(p.PluginConfig[0].Args), "MostAllocated") {
		t.Fatalf("profile %+v", p)
	}
	if *c.PodInitialBackoffSeconds != 1 || *c.PodMaxBackoffSeconds != 10 {
		t.Error("backoff defaults not applied")
	}
}

func TestParseRejects(t *testing.T) {
	for name, doc := range map[string]string{
		"wrong apiVersion":  "apiVersion: kubescheduler.config.k8s.io/v1beta9\nkind: KubeSchedulerConfiguration\n",
		"missing kind":      "apiVersion: kubescheduler.config.k8s.io/v1\n",
		"unknown field":     "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\npercentageOfNodes: 3\n",
		"percentage":        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\npercentageOfNodesToScore: 101\n",
		"duplicate profile": "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- schedulerName: a\n- schedulerName: a\n",
	} {
		if _, err := Parse([]byte(doc)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
