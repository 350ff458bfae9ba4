package podsync

import (
	"fmt"
	"strings"
	"time"

	"github.com/distribution/reference"
)

// Image pull back-off, as upstream's image manager: after a failed pull of
// an image for a pod, that pod does not pull that image again until the
// back-off has passed (Base after the first failure, twice as long after
// each further failure while the entry is live, at most Max; an entry not
// updated for 2×Max has expired and starts over, as flowcontrol.Backoff).
// A container that needs the image meanwhile waits with ImagePullBackOff,
// whose message carries the last pull's error.
//
// The back-off is kept per pod and image (upstream's "<pod UID>_<image>"
// key): containers of one pod with the same image share it, other pods do
// not. A successful pull leaves the entry as it is (upstream only collects
// expired entries then); a later failure within 2×Max of the last one
// doubles the back-off again.

// Waiting reasons of image pulls, as upstream's (images.ErrImagePull,
// images.ErrImagePullBackOff, images.ErrImageInspect,
// images.ErrInvalidImageName, and CRI's errors.ErrRegistryUnavailable and
// errors.ErrSignatureValidationFailed).
const (
	ReasonErrImagePull              = "ErrImagePull"
	ReasonImagePullBackOff          = "ImagePullBackOff"
	ReasonImageInspectError         = "ImageInspectError"
	ReasonInvalidImageName          = "InvalidImageName"
	ReasonRegistryUnavailable       = "RegistryUnavailable"
	ReasonSignatureValidationFailed = "SignatureValidationFailed"
)

// InvalidImageName is the message of the InspectFailed event and of the
// InvalidImageName waiting when image is not a valid image reference, ""
// when it is one. As upstream's image manager (applyDefaultImageTag), the
// reference is parsed as a normalized name (docker.io/library/ implied);
// the API server checks no more than that an image is given.
func InvalidImageName(image string) string {
	_, msg := DefaultImageTag(image)
	return msg
}

// DefaultImageTag is the image reference the kubelet asks the runtime
// for, as upstream's image manager (applyDefaultImageTag): image with
// ":latest" appended when it names neither a tag nor a digest ("nginx" is
// "nginx:latest", "nginx@sha256:…" and "nginx:1.27" stay as they are),
// not otherwise normalized (no docker.io/library/ added), so that the
// runtime normalizes as it does. msg is InvalidImageName's message when
// image does not parse (then ref is ""). Events and waiting messages keep
// quoting the image as the pod names it, as upstream's.
func DefaultImageTag(image string) (ref, msg string) {
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return "", fmt.Sprintf("Failed to apply default image tag %q: couldn't parse image name %q: %v", image, image, err)
	}
	if _, ok := named.(reference.Digested); ok {
		return image, ""
	}
	tag := "latest"
	if t, ok := named.(reference.Tagged); ok {
		tag = t.Tag()
	}
	if !strings.HasSuffix(image, ":"+tag) {
		return image + ":" + tag, ""
	}
	return image, ""
}

// InspectImageFailedMessage is the message of the InspectFailed event and
// of the ImageInspectError waiting when asking the runtime for the
// image's status failed with err. Upstream's image manager quotes the
// image reference the failed lookup returned, which is always empty, not
// the image: `Failed to inspect image "": <err>`; so do we.
func InspectImageFailedMessage(err error) string {
	return fmt.Sprintf("Failed to inspect image %q: %v", "", err)
}

// PresentImageMessage is the message of the Pulled event when image is
// present and the pod may use it without a pull, as upstream 1.37's image
// manager words it with KubeletEnsureSecretPulledImages (beta, on by
// default since 1.35; the older "already present on machine" is its
// wording with the gate off).
func PresentImageMessage(image string) string {
	return fmt.Sprintf("Container image %q already present on machine and can be accessed by the pod", image)
}

// PulledImageMessage is the message of the Pulled event after a pull of
// image that took pull (the CRI pull and the size lookup) and total
// (including waiting for the pull to start), both truncated to the
// millisecond, of an image of size bytes (CRI ImageStatus's size; 0 when
// unknown), as upstream's image manager writes it.
func PulledImageMessage(image string, pull, total time.Duration, size uint64) string {
	return fmt.Sprintf("Successfully pulled image %q in %v (%v including waiting). Image size: %d bytes.",
		image, pull.Truncate(time.Millisecond), total.Truncate(time.Millisecond), size)
}

// PullFailure classifies a failed pull of image with error message msg
// as upstream's image manager (evalCRIPullErr) does: a message beginning
// with "RegistryUnavailable" or "SignatureValidationFailed" (CRI's errors,
// which runtimes such as CRI-O return and the CRI client passes on
// without the gRPC code) gives that reason and upstream's sentence with
// the rest of the message; any other is ErrImagePull with msg as is.
func PullFailure(image, msg string) (reason, message string) {
	if rest, ok := strings.CutPrefix(msg, ReasonRegistryUnavailable); ok {
		return ReasonRegistryUnavailable, fmt.Sprintf("image pull failed for %s because the registry is unavailable%s", image, rest)
	}
	if rest, ok := strings.CutPrefix(msg, ReasonSignatureValidationFailed); ok {
		return ReasonSignatureValidationFailed, fmt.Sprintf("image pull failed for %s because the signature validation failed%s", image, rest)
	}
	return ReasonErrImagePull, msg
}

// DefaultImagePullBackoff is upstream's image pull back-off
// (imageBackOffPeriod 10 s doubling to MaxImageBackOff 5 min), a schedule
// of its own, apart from CrashLoopBackOff's.
var DefaultImagePullBackoff = BackoffConfig{Base: 10 * time.Second, Max: 5 * time.Minute}

// ImagePullEntry is the pull back-off of one image for one pod.
type ImagePullEntry struct {
	BackoffEntry
	// LastError is "<reason>: <message>" of the last failed pull (upstream's
	// prevPullErrMsg), cleared when the next pull starts.
	LastError string
}

// ImagePullDecision is DecideImagePull's answer.
type ImagePullDecision struct {
	// Pull: pull the image now (the back-off has passed or there is none).
	Pull bool
	// Otherwise the container waits with ImagePullBackOff and Message
	// until Until, when the image may be pulled again.
	Message string
	Until   time.Time
}

// BackOffPullingImageMessage is the message of the BackOff event recorded
// while image's pull backs off (upstream's, without the last error).
func BackOffPullingImageMessage(image string) string {
	return fmt.Sprintf("Back-off pulling image %q", image)
}

// DecideImagePull decides whether image may be pulled at now for the pod
// whose back-off entry for it is e (the zero entry: never failed), and if
// not, the ImagePullBackOff waiting message: upstream's `Back-off pulling
// image "<image>"`, followed by ": " and the last pull's error when known.
// It is only asked when the pull policy wants a pull (Always, or
// IfNotPresent without the image): ErrImageNeverPull comes first.
func DecideImagePull(c BackoffConfig, e ImagePullEntry, image string, now time.Time) ImagePullDecision {
	wait, until := c.InBackoff(e.BackoffEntry, e.LastUpdate, now)
	if !wait {
		return ImagePullDecision{Pull: true}
	}
	msg := BackOffPullingImageMessage(image)
	if e.LastError != "" {
		msg += ": " + e.LastError
	}
	return ImagePullDecision{Message: msg, Until: until}
}

// ImagePullStarted is e once a pull starts: the last error is forgotten
// (the next back-off reports this pull's).
func ImagePullStarted(e ImagePullEntry) ImagePullEntry {
	e.LastError = ""
	return e
}

// ImagePullFailed is e after a pull that failed at now with reason and
// message (PullFailure's: what the container's waiting shows): the
// back-off is renewed (Base, or doubled up to Max) and "<reason>:
// <message>" kept for the ImagePullBackOff message.
func ImagePullFailed(c BackoffConfig, e ImagePullEntry, reason, message string, now time.Time) ImagePullEntry {
	return ImagePullEntry{BackoffEntry: c.Next(e.BackoffEntry, now), LastError: reason + ": " + message}
}

// ImagePullExpired reports whether e has expired at now (no failure for
// 2×Max): it decides as no entry would, and may be dropped.
func ImagePullExpired(c BackoffConfig, e ImagePullEntry, now time.Time) bool {
	return c.expired(e.BackoffEntry, now)
}
