// Package imagelocality is the ImageLocality score plugin: it favours nodes
// that already have the pod's container images (node.status.images), as
// kube-scheduler's does. Each container whose image the node has adds the
// image's size scaled by its spread (the share of all nodes that have it,
// so that an image on every node does not pull every pod to one node); the
// sum, clamped between 23 MB and 1000 MB per container, maps linearly onto
// 0–100. Image names are matched as written, after adding ":latest" to a
// name without a tag, as upstream does.
package imagelocality

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"

	fw "github.com/kubeproof/kubeproof/impl/scheduler/framework"
)

// Name is the plugin's name.
const Name = "ImageLocality"

// Thresholds, as upstream: below minThreshold a node gets 0; at
// maxContainerThreshold per container it gets 100.
const (
	mb                    int64 = 1024 * 1024
	minThreshold          int64 = 23 * mb
	maxContainerThreshold int64 = 1000 * mb
)

const preScoreKey fw.StateKey = "PreScore" + Name

// ImageLocality is the plugin.
type ImageLocality struct {
	handle fw.Handle
}

// New is the plugin factory; the plugin takes no arguments.
func New(raw json.RawMessage, h fw.Handle) (fw.Plugin, error) {
	var args struct{}
	if err := fw.DecodeArgs(raw, &args); err != nil {
		return nil, fmt.Errorf("decoding ImageLocality args: %w", err)
	}
	return &ImageLocality{handle: h}, nil
}

// Name implements fw.Plugin.
func (*ImageLocality) Name() string { return Name }

// preScoreState maps each of the pod's (normalized) image names that some
// node has to how many containers use it and its spread.
type preScoreState struct {
	images        map[string]imageUse
	numContainers int
}

type imageUse struct {
	containers int
	spread     float64
}

func (s *preScoreState) Clone() fw.StateData { return s }

// PreScore implements fw.PreScorePlugin. It looks up, once per pod, which
// of its images any node has; when none does every node would score 0, and
// the plugin skips scoring.
func (pl *ImageLocality) PreScore(_ context.Context, state *fw.CycleState, pod *v1.Pod, _ []*fw.NodeInfo) *fw.Status {
	lister := pl.handle.SnapshotSharedLister().NodeInfos()
	all, err := lister.List()
	if err != nil {
		return fw.AsStatus(err)
	}
	s := &preScoreState{images: map[string]imageUse{}, numContainers: len(pod.Spec.InitContainers) + len(pod.Spec.Containers)}
	for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			name := NormalizedImageName(cs[i].Image)
			n := lister.NumNodesWithImage(name)
			if n == 0 || len(all) == 0 {
				continue
			}
			u := s.images[name]
			u.containers++
			u.spread = float64(n) / float64(len(all))
			s.images[name] = u
		}
	}
	if len(s.images) == 0 {
		return fw.NewStatus(fw.Skip)
	}
	state.Write(preScoreKey, s)
	return nil
}

// Score implements fw.ScorePlugin.
func (pl *ImageLocality) Score(_ context.Context, state *fw.CycleState, _ *v1.Pod, nodeInfo *fw.NodeInfo) (int64, *fw.Status) {
	d, err := state.Read(preScoreKey)
	if err != nil {
		return 0, fw.AsStatus(fmt.Errorf("reading %q from cycleState: %w", preScoreKey, err))
	}
	s := d.(*preScoreState)
	return calculatePriority(sumImageScores(nodeInfo.Node(), s), s.numContainers), nil
}

// ScoreExtensions implements fw.ScorePlugin: scores are already in range.
func (*ImageLocality) ScoreExtensions() fw.ScoreExtensions { return nil }

// sumImageScores adds, for each container whose image the node has, the
// image's size scaled by its spread.
func sumImageScores(node *v1.Node, s *preScoreState) int64 {
	var sum int64
	seen := 0
	for _, img := range node.Status.Images {
		for _, name := range img.Names {
			u, ok := s.images[name]
			if !ok {
				continue
			}
			sum += int64(u.containers) * int64(float64(img.SizeBytes)*u.spread)
			if seen++; seen == len(s.images) {
				return sum
			}
		}
	}
	return sum
}

// calculatePriority maps the sum onto 0–100 between the thresholds.
func calculatePriority(sum int64, numContainers int) int64 {
	maxThreshold := maxContainerThreshold * int64(numContainers)
	sum = max(min(sum, maxThreshold), minThreshold)
	return fw.MaxNodeScore * (sum - minThreshold) / (maxThreshold - minThreshold)
}

// NormalizedImageName adds ":latest" to an image name without a tag (the
// name a container runtime reports), as upstream does; a digest or tag is
// kept as it is.
func NormalizedImageName(name string) string {
	if strings.LastIndex(name, ":") <= strings.LastIndex(name, "/") {
		name += ":latest"
	}
	return name
}
