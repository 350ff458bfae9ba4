package kubelet

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"

	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
)

// laterImageStatus is a runtime whose image status answers as the
// simulation's for the first CRI ImageStatus call (the kubelet's presence
// check) and differently for later ones (the image user's lookup): the
// image's user cannot be read (userErr), or the image is gone (gone).
type laterImageStatus struct {
	runtime.Runtime
	userErr error
	gone    bool

	mu       sync.Mutex
	statuses int
}

func (l *laterImageStatus) ImageStatus(ctx context.Context, image *runtimeapi.ImageSpec) (string, error) {
	l.mu.Lock()
	l.statuses++
	later := l.statuses > 1
	l.mu.Unlock()
	if later && l.gone {
		return "", nil
	}
	return l.Runtime.ImageStatus(ctx, image)
}

func (l *laterImageStatus) ImageUser(ctx context.Context, image *runtimeapi.ImageSpec) (*int64, string, error) {
	l.mu.Lock()
	later := l.statuses > 1
	l.mu.Unlock()
	if later && l.userErr != nil {
		return nil, "", l.userErr
	}
	return l.Runtime.ImageUser(ctx, image)
}

// TestImageUserLookupAsUpstream: the image's user is read over CRI as
// upstream's getImageUser reads it (ImageStatus of the pod's image): an
// error fails the container with CreateContainerConfigError, the event and
// the waiting message worded as upstream's startContainer words it (the
// runtime's gRPC message alone, nothing added); an image ImageStatus no
// longer finds runs as root, as upstream assumes, instead of failing.
func TestImageUserLookupAsUpstream(t *testing.T) {
	for _, tc := range []struct {
		name    string
		rt      func(runtime.Runtime) *laterImageStatus
		running bool
		message string
	}{
		{name: "unreadable", rt: func(r runtime.Runtime) *laterImageStatus {
			return &laterImageStatus{Runtime: r, userErr: errors.New("image config unreadable")}
		}, message: "image config unreadable"},
		{name: "gone", rt: func(r runtime.Runtime) *laterImageStatus { return &laterImageStatus{Runtime: r, gone: true} }, running: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			if _, err := h.rt.PullImage(h.ctx, &runtimeapi.ImageSpec{Image: "nginx:1.27"}); err != nil {
				t.Fatal(err)
			}
			client, dir := dialFakeCRI(t, tc.rt(h.rt))
			h.krt = client
			events := record.NewFakeRecorder(100)
			h.k = h.newKubelet(func(c *Config) { c.PodLogsDir = filepath.Join(dir, "pods"); c.Recorder = events })
			p := h.create(h.pod("web", nil))
			h.k.HandlePod(h.get(p))
			_, err := h.k.syncPod(h.ctx, p.UID)
			got := h.get(p)
			cs := cstatus(got, "app")
			if tc.running {
				if err != nil || cs.State.Running == nil {
					t.Fatalf("sync %v, container %+v; want it running as root", err, cs.State)
				}
				return
			}
			if w := cs.State.Waiting; w == nil || w.Reason != reasonCreateContainerConfigErr || w.Message != tc.message {
				t.Errorf("container %+v, want waiting with %s: %s", cs.State, reasonCreateContainerConfigErr, tc.message)
			}
			wantEvents(t, drain(events), "Warning Failed Error: "+tc.message)
		})
	}
}
