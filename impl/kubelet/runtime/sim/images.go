package sim

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/distribution/reference"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
)

// SetImageUser sets the user an image's config names ("1000", "1000:1000",
// "nginx"); images run as root (no user) unless set.
// The image is named by any spelling of its reference ("nginx" is
// docker.io/library/nginx:latest).
func (r *Runtime) SetImageUser(image, user string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.imageUsers[normalizedImage(image)] = user
}

// ImageUser implements runtime.Runtime as containerd's ImageStatus does:
// the user part of the image's "user[:group]", as a uid if numeric and as
// a user name otherwise; both empty if the image sets no user or is
// absent (ImageStatus then has no image, and no error).
func (r *Runtime) ImageUser(_ context.Context, image *runtimeapi.ImageSpec) (*int64, string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	id, err := r.resolveImage(image.GetImage())
	if err != nil || id == "" {
		return nil, "", resolveErrorOrNil(image.GetImage(), err)
	}
	uid, user := r.imageUser(r.imageIDs[id].name)
	return uid, user, nil
}

// imageUser is the user of the image named name (normalized): a uid, a
// user name, or neither. r.mu is held.
func (r *Runtime) imageUser(name string) (*int64, string) {
	user, _, _ := strings.Cut(r.imageUsers[name], ":")
	if user == "" {
		return nil, ""
	}
	if uid, err := strconv.ParseInt(user, 10, 64); err == nil {
		return &uid, ""
	}
	return nil, user
}

// ImageSize implements runtime.Runtime: a present image's size
// (SetImageSize's, or DefaultImageSize), 0 for an absent one.
func (r *Runtime) ImageSize(_ context.Context, image *runtimeapi.ImageSpec) (uint64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	id, err := r.resolveImage(image.GetImage())
	if err != nil || id == "" {
		return 0, resolveErrorOrNil(image.GetImage(), err)
	}
	return r.imageSize(r.imageIDs[id].name), nil
}

// RequireCredentials makes pulls of images from registry (a host[:port],
// the first component of the image name) fail as unauthorized unless they
// carry this username and password.
func (r *Runtime) RequireCredentials(registry, username, password string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.registries[registry] = &runtimeapi.AuthConfig{Username: username, Password: password}
}

// PullAuths returns the credentials each of the latest pulls of image
// presented (at most 64), in order (nil for a pull without credentials).
func (r *Runtime) PullAuths(image string) []*runtimeapi.AuthConfig {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*runtimeapi.AuthConfig(nil), r.pullAuths[image]...)
}

// SetImageMissing makes the image (any spelling of its reference) one
// its registry does not have: a pull of it fails as containerd's does for
// a reference the registry answers 404 for (pullNotFound), after the
// registry's credentials check.
func (r *Runtime) SetImageMissing(image string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.missing[normalizedImage(image)] = true
}

// authorizePull checks auth against the image's registry (RequireCredentials),
// then that the registry has the image (SetImageMissing); image is the
// name as asked, ref its normalized reference. The failures are
// containerd's CRI PullImage errors as the kubelet's CRI client returns
// them (pullNotFound, pullUnauthorized). r.mu is held.
func (r *Runtime) authorizePull(image, ref string, auth *runtimeapi.AuthConfig) error {
	if host, _, found := strings.Cut(image, "/"); found {
		if want, ok := r.registries[host]; ok {
			if err := pullUnauthorized(ref, auth, want); err != nil {
				return err
			}
		}
	}
	if r.missing[ref] || matchesAny(r.missingPat, image, ref) {
		return pullNotFound(ref)
	}
	return nil
}

// missingImages reads Config.MissingImages: the normalized references of
// the plain ones, and the patterns (those with a glob metacharacter),
// checked with path.Match.
func missingImages(images []string) (map[string]bool, []string, error) {
	missing := map[string]bool{}
	var patterns []string
	for _, m := range images {
		m = strings.TrimSpace(m)
		switch {
		case m == "":
		case strings.ContainsAny(m, "*?["):
			if _, err := path.Match(m, ""); err != nil {
				return nil, nil, fmt.Errorf("missing image pattern %q: %w", m, err)
			}
			patterns = append(patterns, m)
		default:
			missing[normalizedImage(m)] = true
		}
	}
	return missing, patterns, nil
}

// matchesAny reports whether one of patterns matches the image reference
// as asked, its normalized form ref or its familiar form (Docker Hub's
// registry and library/ left out: nginx:1.27, nosuch/app:latest).
func matchesAny(patterns []string, image, ref string) bool {
	if len(patterns) == 0 {
		return false
	}
	familiar := ref
	if named, err := reference.ParseNormalizedNamed(ref); err == nil {
		familiar = reference.FamiliarString(named)
	}
	for _, p := range patterns {
		for _, s := range [...]string{image, ref, familiar} {
			if ok, _ := path.Match(p, s); ok {
				return true
			}
		}
	}
	return false
}

// pullFailure is containerd's CRI PullImage message for the reference ref
// (normalized, as its CRI pulls it) that its resolver could not resolve
// for cause: "failed to pull and unpack image <ref>: failed to resolve
// reference <ref>: <cause>", the CRI plugin's words around the client
// pull's (containerd 1.7 and 2.0; 2.1 and later pulling through the
// transfer service word the inner part "failed to resolve image").
func pullFailure(ref, cause string) string {
	return fmt.Sprintf("failed to pull and unpack image %q: failed to resolve reference %q: %s", ref, ref, cause)
}

// pullNotFound is containerd's error for a reference its registry does not
// have: the resolver's "<ref>: not found" wraps errdefs.ErrNotFound, so
// its gRPC server sends status NotFound, which the kubelet's CRI client
// returns as it is (the ErrImagePull message and the "Failed to pull
// image" event read "rpc error: code = NotFound desc = ...", as upstream
// 1.37's remote image service passes every code but Unknown on).
func pullNotFound(ref string) error {
	return status.Error(codes.NotFound, pullFailure(ref, ref+": not found"))
}

// pullUnauthorized is containerd's error for a pull of ref from a registry
// that wants want's basic-auth credentials, auth being what the pull
// presented (nil: none), or nil when auth is want: without a username or
// password its authorizer gives up at the registry's challenge ("pull
// access denied, repository does not exist or may require authorization:
// authorization failed: no basic auth credentials"); with others the
// registry keeps answering 401 to the manifest's HEAD request until the
// resolver stops retrying ("unexpected status from HEAD request to <url>:
// 401 Unauthorized"). containerd's gRPC server sends either as status
// Unknown, whose message alone upstream's remote image service returns
// (it strips the code from Unknown pull errors): the plain message is
// what the kubelet sees.
func pullUnauthorized(ref string, auth, want *runtimeapi.AuthConfig) error {
	if auth.GetUsername() == want.Username && auth.GetPassword() == want.Password {
		return nil
	}
	if auth.GetUsername() == "" || auth.GetPassword() == "" {
		return errors.New(pullFailure(ref, "pull access denied, repository does not exist or may require authorization: authorization failed: no basic auth credentials"))
	}
	return errors.New(pullFailure(ref, fmt.Sprintf("unexpected status from HEAD request to %s: 401 Unauthorized", manifestURL(ref))))
}

// manifestURL is the registry URL containerd's resolver asks for ref's
// manifest: https://<host>/v2/<repository>/manifests/<tag or digest>,
// Docker Hub's host being registry-1.docker.io (the simulation's
// registries all speak HTTPS).
func manifestURL(ref string) string {
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return ref
	}
	host := reference.Domain(named)
	if host == "docker.io" {
		host = "registry-1.docker.io"
	}
	object := "latest"
	if d, ok := named.(reference.Digested); ok {
		object = d.Digest().String()
	} else if t, ok := named.(reference.Tagged); ok {
		object = t.Tag()
	}
	return fmt.Sprintf("https://%s/v2/%s/manifests/%s", host, reference.Path(named), object)
}

// ContainerSecurity returns the Linux security context a container was
// created with.
func (r *Runtime) ContainerSecurity(id string) (*runtimeapi.LinuxContainerSecurityContext, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.containerByID(id)
	if !ok {
		return nil, fmt.Errorf("container %s: %w", id, runtime.ErrNotFound)
	}
	return c.security, nil
}

// SandboxLinux returns the Linux config a sandbox was created with (its
// resources and overhead those of its last UpdatePodSandboxResources).
func (r *Runtime) SandboxLinux(id string) (*runtimeapi.LinuxPodSandboxConfig, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.sandboxByID(id)
	if !ok {
		return nil, fmt.Errorf("sandbox %s: %w", id, runtime.ErrNotFound)
	}
	return s.linuxConfig(), nil
}

// imageNames is what container statuses report of an image, as
// containerd's: its repo tag (the pulled name normalized,
// "docker.io/library/nginx:latest"; "" for an image pulled by digest
// alone) and its repo digest ("docker.io/library/nginx@sha256:…"), the
// pod status's image and imageID. Made once per pulled image, so that
// statuses of its containers share the strings.
type imageNames struct {
	name   string // the name it was pulled as, normalized (normalizedImage)
	tag    string
	digest string
}

// newImageNames are the names of the image pulled as name (normalized)
// with id ref. The simulated registry's manifest digest is the image's
// id. A name that does not parse as a reference is its own tag, and its
// id its digest.
func newImageNames(name, ref string) imageNames {
	n := imageNames{name: name, tag: name, digest: ref}
	named, err := reference.ParseNormalizedNamed(name)
	if err != nil {
		return n
	}
	if d, ok := named.(reference.Digested); ok {
		// Pulled by digest: containerd records the repo digest alone
		// (a tag given with the digest is dropped).
		n.tag, n.digest = "", named.Name()+"@"+d.Digest().String()
		return n
	}
	n.tag, n.digest = reference.TagNameOnly(named).String(), named.Name()+"@"+ref
	return n
}

// normalizedImage is the reference containerd's CRI stores and looks an
// image name up as (ParseDockerRef): "nginx" is
// "docker.io/library/nginx:latest", a name with a digest loses its tag. A
// name that is no reference stays as it is.
func normalizedImage(s string) string {
	named, err := reference.ParseDockerRef(s)
	if err != nil {
		return s
	}
	return named.String()
}

// addImage records the image pulled as n.name under its id and its
// references: the name it was pulled as (its repo tag, or its repo digest
// if pulled by digest) and its repo digest. r.mu is held.
func (r *Runtime) addImage(id string, n imageNames) {
	r.images[n.name] = id
	if n.digest != id {
		r.images[n.digest] = id
	}
	r.imageIDs[id] = n
}

// resolveImage is the id of the present image s names, as containerd's
// CRI resolves an image (LocalResolve): s is an image id, or a reference
// normalized as at pull time (normalizedImage) that names one of its repo
// tags or repo digests, or else a truncated id (shortImageID). "" without
// error: no image; an error: s is a prefix of several ids (resolveError
// words it as containerd's CRI calls do). r.mu is held.
func (r *Runtime) resolveImage(s string) (string, error) {
	if _, ok := r.imageIDs[s]; ok {
		return s, nil
	}
	if id, ok := r.images[r.normalized(s)]; ok {
		return id, nil
	}
	return r.shortImageID(s)
}

// errAmbiguousID is containerd's image store's error for a truncated id
// that more than one image's id starts with (go-digest digestset's
// ErrDigestAmbiguous).
var errAmbiguousID = errors.New("ambiguous digest string")

// shortImageID is the image whose id s truncates, as containerd's CRI
// image store's Get (go-digest digestset Lookup): s is the start of the
// id's hex digits, alone ("3f1a2b") or after "sha256:" (a full one is an
// id, which resolveImage looked up already); errAmbiguousID if several
// ids start so, "" if none. An empty s names no image (containerd's
// lookup would take it as the prefix of every id; the kubelet never asks
// for ""). r.mu is held.
func (r *Runtime) shortImageID(s string) (string, error) {
	hexPart, prefixed := strings.CutPrefix(s, "sha256:")
	if hexPart == "" || prefixed && len(hexPart) == sha256.Size*2 || !isLowerHex(hexPart) {
		return "", nil
	}
	found := ""
	for id := range r.imageIDs {
		if strings.HasPrefix(strings.TrimPrefix(id, "sha256:"), hexPart) {
			if found != "" {
				return "", errAmbiguousID
			}
			found = id
		}
	}
	return found, nil
}

// isLowerHex reports whether s is all lower-case hex digits (the digits
// of an id).
func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// resolveErrorOrNil is resolveError(image, err), nil without err.
func resolveErrorOrNil(image string, err error) error {
	if err == nil {
		return nil
	}
	return resolveError(image, err)
}

// resolveError is a failure to resolve image, as containerd's CRI
// ImageStatus and RemoveImage return it (wrapping the image store's
// error) and its gRPC server sends it: status Unknown.
func resolveError(image string, err error) error {
	return status.Errorf(codes.Unknown, "can not resolve %q locally: %v", image, err)
}

// maxSpellings bounds the image names whose normalized form a runtime
// remembers.
const maxSpellings = 64

// normalized is normalizedImage(s), remembered for the names asked lately:
// a node's pods name few images, and every container start asks for its
// image by the pod's name for it, which parsing anew costs ~2 µs and 11
// allocations. r.mu is held.
func (r *Runtime) normalized(s string) string {
	if n, ok := r.spellings[s]; ok {
		return n
	}
	n := normalizedImage(s)
	if r.spellings == nil || len(r.spellings) >= maxSpellings {
		r.spellings = make(map[string]string)
	}
	r.spellings[s] = n
	return n
}

// statusImage is the image and image ref c's status reports, as
// containerd's ContainerStatus: the image's repo tag, or what the
// container was created with when the image has none or is gone, and its
// repo digest, or its ref when the image is gone. r.mu is held.
func (r *Runtime) statusImage(c *container) (image, ref string) {
	image, ref = c.image, c.imageRef
	if n, ok := r.imageIDs[c.imageRef]; ok {
		if n.tag != "" {
			image = n.tag
		}
		ref = n.digest
	}
	return image, ref
}
