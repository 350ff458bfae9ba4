package kubelet

import (
	"context"
	"errors"
	"path/filepath"
	"strings"

	grpcstatus "google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/credentials"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/security"
)

// EventFailedToRetrieveImagePullSecret is the warning recorded on a pod
// when some of its imagePullSecrets cannot be read, as upstream.
const EventFailedToRetrieveImagePullSecret = "FailedToRetrieveImagePullSecret"

// pullKeyring reads the pod's imagePullSecrets through the API and builds
// the keyring the image pull uses: their credentials, then the node's
// credential provider plugins' (Config.ImageCredentialProviders) for this
// pod (its service account's, for plugins in token mode), as upstream's
// MakeDockerKeyring with its per-pod credential provider keyring. Secrets
// that cannot be read are skipped with a warning event (the pull may
// still succeed without them); a malformed docker config is an error.
func (k *Kubelet) pullKeyring(ctx context.Context, pod *v1.Pod) (*credentials.Keyring, error) {
	node := k.cfg.ImageCredentialProviders
	forPod := credentials.Pod{Namespace: pod.Namespace, Name: pod.Name, UID: string(pod.UID),
		ServiceAccountName: pod.Spec.ServiceAccountName, API: serviceAccountAPI{ctx: ctx, client: k.client}}
	if len(pod.Spec.ImagePullSecrets) == 0 {
		if node == nil {
			return nil, nil
		}
		return (*credentials.Keyring)(nil).WithNode(node, forPod), nil
	}
	var secrets []*v1.Secret
	var failed []string
	for _, ref := range pod.Spec.ImagePullSecrets {
		if ref.Name == "" {
			continue
		}
		s, err := k.objects.secret(ctx, pod.Namespace, ref.Name)
		if err != nil {
			k.log.Info("unable to retrieve pull secret, the image pull may not succeed", "pod", pod.Namespace+"/"+pod.Name, "secret", ref.Name, "err", err)
			failed = append(failed, ref.Name)
			continue
		}
		secrets = append(secrets, s)
	}
	if len(failed) > 0 {
		k.podEvent(pod, v1.EventTypeWarning, EventFailedToRetrieveImagePullSecret,
			"Unable to retrieve some image pull secrets (%s); attempting to pull the image may not succeed.", strings.Join(failed, ", "))
	}
	kr, err := credentials.FromSecrets(secrets)
	if err != nil {
		return nil, err
	}
	return kr.WithNode(node, forPod), nil
}

// pullImage pulls image with each of creds (the keyring's for it, most
// specific first) until one pull succeeds (without credentials if there
// are none, returning that pull's error as is), returning the image
// reference and the credential that pulled it (nil: none). The failures
// with credentials are returned as upstream's kubelet aggregates them: one
// error as it is, several distinct messages as "[m1, m2]".
func (k *Kubelet) pullImage(ctx context.Context, image *runtimeapi.ImageSpec, creds []credentials.Tracked) (string, *credentials.Tracked, error) {
	if len(creds) == 0 {
		ref, err := k.rt.PullImageWithAuth(ctx, image, nil)
		return ref, nil, err
	}
	var errs []error
	for i := range creds {
		ref, err := k.rt.PullImageWithAuth(ctx, image, creds[i].Auth)
		if err == nil {
			return ref, &creds[i], nil
		}
		errs = append(errs, err)
	}
	return "", nil, utilerrors.NewAggregate(errs)
}

// containerSecurity checks runAsNonRoot against the image's user and
// returns the container's CRI security context. As upstream's
// getImageUser, the user is read from CRI ImageStatus of the image as the
// pod names it, and an image that names no user (or that ImageStatus no
// longer finds) runs as root. A failed lookup is the runtime's error as
// upstream's startContainer words it (runtimeMessage).
func (k *Kubelet) containerSecurity(ctx context.Context, pod *v1.Pod, c *v1.Container) (*runtimeapi.LinuxContainerSecurityContext, error) {
	uid, username, err := k.rt.ImageUser(ctx, &runtimeapi.ImageSpec{Image: c.Image})
	if err != nil {
		return nil, runtimeMessage(err)
	}
	if uid == nil && username == "" {
		uid = new(int64)
	}
	if err := security.VerifyRunAsNonRoot(pod, c, uid, username); err != nil {
		return nil, err
	}
	return security.Container(pod, c, security.ImageUser{UID: uid, Username: username},
		security.Options{SeccompProfileRoot: filepath.Join(k.cfg.RootDir, "seccomp"), SeccompDefault: k.cfg.SeccompDefault}), nil
}

// runtimeMessageError is a runtime's error worded as upstream's kubelet
// words it in events and waiting messages: a gRPC status's message alone
// (grpcstatus.FromError(err).Message()).
type runtimeMessageError struct {
	err error
	msg string
}

func (e *runtimeMessageError) Error() string { return e.msg }
func (e *runtimeMessageError) Unwrap() error { return e.err }

// runtimeMessage is err worded as upstream's kubelet words a runtime's
// error: a gRPC status error, also one our CRI client wrapped with what it
// was doing, as the status's message alone (still wrapping err); any other
// error as it is. (grpcstatus.FromError would word a wrapped status as
// the whole wrapped text.)
func runtimeMessage(err error) error {
	var gs interface{ GRPCStatus() *grpcstatus.Status }
	if errors.As(err, &gs) {
		if s := gs.GRPCStatus(); s != nil && s.Message() != err.Error() {
			return &runtimeMessageError{err: err, msg: s.Message()}
		}
	}
	return err
}
