package imagelocality_test

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"

	fw "github.com/kubeproof/kubeproof/impl/scheduler/framework"
	"github.com/kubeproof/kubeproof/impl/scheduler/plugins/imagelocality"
	tu "github.com/kubeproof/kubeproof/impl/scheduler/testutil"
	"github.com/kubeproof/kubeproof/impl/scheduler/testutil/fwtest"
)

const mb = 1024 * 1024

func withImages(n *v1.Node, imgs ...v1.ContainerImage) *v1.Node {
	n.Status.Images = imgs
	return n
}

func podWithImages(images ...string) *v1.Pod {
	p := tu.Pod("p").Obj()
	p.Spec.Containers = nil
	for _, img := range images {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: img, Image: img})
	}
	return p
}

func TestScore(t *testing.T) {
	nodes := []*v1.Node{
		withImages(tu.Node("n1").Obj(),
			v1.ContainerImage{Names: []string{"app:v1"}, SizeBytes: 500 * mb},
			v1.ContainerImage{Names: []string{"tiny:1"}, SizeBytes: 10 * mb},
			v1.ContainerImage{Names: []string{"big:1"}, SizeBytes: 2000 * mb}),
		withImages(tu.Node("n2").Obj(),
			v1.ContainerImage{Names: []string{"app:v1"}, SizeBytes: 500 * mb},
			v1.ContainerImage{Names: []string{"reg.io/side@sha256:0a1b", "side:latest"}, SizeBytes: 250 * mb},
			v1.ContainerImage{Names: []string{"tiny:1"}, SizeBytes: 10 * mb},
			v1.ContainerImage{Names: []string{"big:1"}, SizeBytes: 2000 * mb}),
		withImages(tu.Node("n3").Obj(),
			v1.ContainerImage{Names: []string{"tiny:1"}, SizeBytes: 10 * mb},
			v1.ContainerImage{Names: []string{"big:1"}, SizeBytes: 2000 * mb}),
	}
	f, snap, err := fwtest.New(nil, nodes, nil)
	if err != nil {
		t.Fatal(err)
	}
	pl, err := imagelocality.New(nil, f)
	if err != nil {
		t.Fatal(err)
	}
	plugin := pl.(interface {
		fw.PreScorePlugin
		fw.ScorePlugin
	})
	all, _ := snap.List()
	tests := []struct {
		name string
		pod  *v1.Pod
		want map[string]int64 // nil: PreScore skips
	}{
		{
			// app:v1 is on 2 of 3 nodes, side:latest on 1: n1 scores
			// 500 MB * 2/3, n2 adds 250 MB * 1/3, scaled between 23 MB
			// and 2 x 1000 MB.
			name: "images scaled by their spread",
			pod:  podWithImages("app:v1", "side"),
			want: map[string]int64{"n1": 15, "n2": 19, "n3": 0},
		},
		{name: "below the 23 MB threshold", pod: podWithImages("tiny:1"), want: map[string]int64{"n1": 0, "n2": 0, "n3": 0}},
		{name: "above 1000 MB per container", pod: podWithImages("big:1"), want: map[string]int64{"n1": 100, "n2": 100, "n3": 100}},
		{name: "image on no node", pod: podWithImages("nginx")},
		{name: "tag missing means latest, not any tag", pod: podWithImages("app")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state := fw.NewCycleState()
			s := plugin.PreScore(context.Background(), state, tt.pod, all)
			if tt.want == nil {
				if !s.IsSkip() {
					t.Fatalf("PreScore = %v, want Skip", s)
				}
				return
			}
			if !s.IsSuccess() {
				t.Fatalf("PreScore: %v", s)
			}
			for _, ni := range all {
				got, st := plugin.Score(context.Background(), state, tt.pod, ni)
				if !st.IsSuccess() {
					t.Fatalf("Score: %v", st)
				}
				if got != tt.want[ni.Name()] {
					t.Errorf("%s: score %d, want %d", ni.Name(), got, tt.want[ni.Name()])
				}
			}
		})
	}
}

func TestNormalizedImageName(t *testing.T) {
	for in, want := range map[string]string{
		"nginx":                      "nginx:latest",
		"nginx:1.25":                 "nginx:1.25",
		"localhost:5000/app":         "localhost:5000/app:latest",
		"localhost:5000/app:v2":      "localhost:5000/app:v2",
		"reg.io/app@sha256:0a1b2c3d": "reg.io/app@sha256:0a1b2c3d",
	} {
		if got := imagelocality.NormalizedImageName(in); got != want {
			t.Errorf("NormalizedImageName(%q) = %q, want %q", in, got, want)
		}
	}
}
