package kubelet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/credentialprovider"
	"github.com/kubeproof/kubeproof/impl/kubelet/podsync"
)

// podDir is the pod's directory under the kubelet's root directory.
func (k *Kubelet) podDir(uid types.UID) string {
	return filepath.Join(k.cfg.RootDir, "pods", string(uid))
}

// volumeDir is where one volume of the pod is materialized.
func (k *Kubelet) volumeDir(uid types.UID, plugin, name string) string {
	return filepath.Join(k.podDir(uid), "volumes", plugin, name)
}

func volumePlugin(v *v1.Volume) string {
	switch {
	case v.EmptyDir != nil:
		return pluginEmptyDir
	case v.ConfigMap != nil:
		return pluginConfigMap
	case v.Secret != nil:
		return pluginSecret
	case v.DownwardAPI != nil:
		return pluginDownwardAPI
	case v.Projected != nil:
		return pluginProjected
	}
	return ""
}

// The directories, under a pod's volumes directory, of the volume plugins
// the kubelet sets up (volumePlugin), upstream's plugin names escaped.
const (
	pluginEmptyDir    = "kubernetes.io~empty-dir"
	pluginConfigMap   = "kubernetes.io~configmap"
	pluginSecret      = "kubernetes.io~secret"
	pluginDownwardAPI = "kubernetes.io~downward-api"
	pluginProjected   = "kubernetes.io~projected"
)

// volumePlugins are all of them.
var volumePlugins = [...]string{pluginEmptyDir, pluginConfigMap, pluginSecret, pluginDownwardAPI, pluginProjected}

// setUpVolumes materializes the pod's emptyDir, configMap, secret,
// downwardAPI and projected volumes in its pod directory (hostPath volumes
// need nothing).
// It is idempotent; configMap, secret, downwardAPI and projected volumes
// are written through the atomic writer (atomicwriter.go) on every call,
// which writes only a changed payload, so updates reach running pods and
// a reader never sees half of one. Every volume is
// tried, as upstream's volume manager mounts each on its own; the error
// joins one error per failing volume (volumeErrors splits it).
//
// mountOver says whether the directory
// of a memory-backed or huge pages volume found without its tmpfs or
// hugetlbfs may get one (memoryvolumes.go): only for a new sandbox
// (startPod's CreateSandbox: nothing of the pod runs, as after a reboot),
// not before a container is started again while others run, nor on the
// periodic refresh of a running pod's volumes (refreshVolumes); those
// mount only at a directory they had to make. Such a directory was made
// plain by a kubelet before the volumes were mounts, and the pod's
// running containers bound it (private propagation): a mount over it
// would split the volume between them and the containers started next,
// and hide from them what the refresh writes.
func (k *Kubelet) setUpVolumes(ctx context.Context, rec *podRecord, pod *v1.Pod, mountOver bool) error {
	src := clientEnvSource{ctx: ctx, k: k}
	files := make(map[string]volumeFile, 4) // one volume's at a time
	var errs []error
	for i := range pod.Spec.Volumes {
		if err := k.setUpVolume(ctx, src, rec, pod, &pod.Spec.Volumes[i], files, mountOver); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// setUpVolume writes one volume's files (files is scratch space) and,
// when the pod has an fsGroup, gives a new emptyDir, or a configMap,
// secret, downwardAPI or projected volume whose payload is written, that
// group (volumeownership.go). mountOver: see setUpVolumes.
func (k *Kubelet) setUpVolume(ctx context.Context, src clientEnvSource, rec *podRecord, pod *v1.Pod, v *v1.Volume, files map[string]volumeFile, mountOver bool) error {
	plugin := volumePlugin(v)
	if plugin == "" {
		if v.HostPath == nil {
			return fmt.Errorf("volume %q: only emptyDir, configMap, secret, downwardAPI, projected and hostPath volumes are supported", v.Name)
		}
		return nil
	}
	dir := k.volumeDir(pod.UID, plugin, v.Name)
	created := false
	if !isDir(dir) {
		if err := makeVolumeDir(dir, volumeDirMode(v)); err != nil {
			return fmt.Errorf("MountVolume.SetUp failed for volume %q: %w", v.Name, err)
		}
		created = true
	}
	mount := k.mountsTmpfs() && (created || mountOver)
	if mount && memoryBacked(v) {
		// A tmpfs at the directory, unless one is there already
		// (memoryvolumes.go); a new one is set up as a new directory.
		mounted, err := k.setUpTmpfs(pod, v, dir)
		if err != nil {
			return fmt.Errorf("MountVolume.SetUp failed for volume %q : %w", v.Name, err)
		}
		created = created || mounted
	}
	if v.EmptyDir != nil && hugePagesMedium(v.EmptyDir.Medium) {
		// A hugetlbfs of the requested page size (memoryvolumes.go); the
		// size is decided on every node.
		pageSize, err := hugePageSize(v.EmptyDir.Medium, pod)
		if err == nil && mount {
			var mounted bool
			mounted, err = k.setUpHugetlbfs(pod, v.EmptyDir.Medium, dir, pageSize)
			created = created || mounted
		}
		if err != nil {
			return fmt.Errorf("MountVolume.SetUp failed for volume %q : %w", v.Name, err)
		}
	}
	fsGroup := podFSGroup(pod)
	if v.EmptyDir != nil {
		// An emptyDir is given the group when created.
		if fsGroup != nil && created {
			if err := k.setVolumeOwnership(pod, dir, *fsGroup, false); err != nil {
				k.log.Error("emptyDir volume ownership", "volume", v.Name, "pod", pod.Namespace+"/"+pod.Name, "err", err)
			}
		}
		return nil
	}
	clear(files)
	var err error
	switch {
	case v.ConfigMap != nil:
		err = k.configMapFiles(src, pod, v.ConfigMap.Name, v.ConfigMap.Items, v.ConfigMap.Optional, fileMode(v.ConfigMap.DefaultMode), files)
	case v.Secret != nil:
		err = k.secretFiles(src, pod, v.Secret.SecretName, v.Secret.Items, v.Secret.Optional, fileMode(v.Secret.DefaultMode), files)
	case v.DownwardAPI != nil:
		err = k.downwardAPIFiles(pod, v.DownwardAPI.Items, fileMode(v.DownwardAPI.DefaultMode), files)
	case v.Projected != nil:
		err = k.projectedFiles(ctx, src, rec, pod, dir, v.Name, v.Projected, files)
	}
	if err != nil {
		return fmt.Errorf("MountVolume.SetUp failed for volume %q : %w", v.Name, err)
	}
	// The others through the atomic writer (atomicwriter.go); with an
	// fsGroup, the whole volume is given the group each time a payload is
	// written, before it is published (upstream's setPerms). A first
	// write always happens, an empty payload too.
	var setPerms func() error
	if fsGroup != nil {
		setPerms = func() error { return k.setVolumeOwnership(pod, dir, *fsGroup, true) }
	}
	if _, err := atomicWrite(dir, files, setPerms); err != nil {
		return fmt.Errorf("MountVolume.SetUp failed for volume %q : %w", v.Name, err)
	}
	return nil
}

// volumeDirMode is the mode of a volume's directory, as upstream's: an
// emptyDir's 0777 (its setupDir's defaultPerm), as the emptyDir a
// configMap volume is set up in; a memory-backed volume's (memoryBacked:
// an emptyDir of medium Memory, a secret, downwardAPI or projected volume)
// 1777, the mode of the root of the tmpfs mounted there, so that
// containers of any user can use them: the simulated runtime's nodes,
// which mount no tmpfs, give their directories that mode.
func volumeDirMode(v *v1.Volume) os.FileMode {
	if memoryBacked(v) {
		return 0o777 | os.ModeSticky
	}
	return 0o777
}

// makeVolumeDir creates a volume's directory (its parents 0750, as
// upstream's pod directories) with mode, whatever the umask.
func makeVolumeDir(dir string, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o750); err != nil {
		return err
	}
	if err := os.Mkdir(dir, mode); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	return os.Chmod(dir, mode)
}

// volumeFile is one file of a configMap, secret, downwardAPI or projected
// volume: its content (only read: see stringBytes), its mode (the item's
// mode, else the volume's defaultMode, as upstream's payloads) and the
// user that owns it (owner; 0 leaves it the kubelet's): upstream's
// FileProjection. A keep file has no data: its content is the one the
// volume holds (a projected token not yet due, see atomicWrite).
type volumeFile struct {
	data  []byte
	mode  uint32
	owner int64
	keep  bool
}

// defaultFileMode is a volume's defaultMode when the pod has none (the API
// server defaults it to this).
const defaultFileMode = 0o644

// fileMode is a defaultMode or an item's mode, def when unset.
func fileMode(m *int32) uint32 {
	if m == nil {
		return defaultFileMode
	}
	return uint32(*m) & 0o777
}

// itemMode is an item's own mode, else the volume's.
func itemMode(m *int32, def uint32) uint32 {
	if m == nil {
		return def
	}
	return uint32(*m) & 0o777
}

// volumeErrors are the per-volume errors setUpVolumes joined.
func volumeErrors(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// The functions below add a volume's files (path -> content) to files;
// a file's content is only read (compared with, or written to, the file
// on disk), so a string's bytes are not copied (stringBytes).

// configMapFiles adds the files of a configMap volume or projection.
func (k *Kubelet) configMapFiles(src clientEnvSource, pod *v1.Pod, name string, items []v1.KeyToPath, optional *bool, mode uint32, files map[string]volumeFile) error {
	cm, err := src.ConfigMap(pod.Namespace, name)
	if err != nil {
		if apierrors.IsNotFound(err) && ptrTrue(optional) {
			return nil
		}
		return notFoundMessage(err, "configmap", name)
	}
	if len(items) == 0 {
		for key, val := range cm.Data {
			files[key] = volumeFile{data: stringBytes(val), mode: mode}
		}
		for key, val := range cm.BinaryData {
			files[key] = volumeFile{data: val, mode: mode}
		}
		return nil
	}
	for _, it := range items {
		val, ok := cm.BinaryData[it.Key]
		if !ok {
			var s string
			if s, ok = cm.Data[it.Key]; ok {
				val = stringBytes(s)
			}
		}
		if !ok {
			if ptrTrue(optional) {
				continue
			}
			return fmt.Errorf("configmap %q: %w", name, missingKey(it.Key))
		}
		files[it.Path] = volumeFile{data: val, mode: itemMode(it.Mode, mode)}
	}
	return nil
}

// secretFiles adds the files of a secret volume or projection.
func (k *Kubelet) secretFiles(src clientEnvSource, pod *v1.Pod, name string, items []v1.KeyToPath, optional *bool, mode uint32, files map[string]volumeFile) error {
	sec, err := src.Secret(pod.Namespace, name)
	if err != nil {
		if apierrors.IsNotFound(err) && ptrTrue(optional) {
			return nil
		}
		return notFoundMessage(err, "secret", name)
	}
	if err := project(sec.Data, items, ptrTrue(optional), mode, files); err != nil {
		return fmt.Errorf("secret %q: %w", name, err)
	}
	return nil
}

// downwardAPIFiles adds the files of a downwardAPI volume or projection.
func (k *Kubelet) downwardAPIFiles(pod *v1.Pod, items []v1.DownwardAPIVolumeFile, mode uint32, files map[string]volumeFile) error {
	for _, item := range items {
		var val string
		var err error
		switch {
		case item.FieldRef != nil:
			val, err = podField(pod, item.FieldRef.FieldPath)
		case item.ResourceFieldRef != nil:
			// As upstream's downwardAPI volume plugin: the app or init
			// container named, its unset limits the node's allocatable
			// (pod-level limits are not read here, only for env vars).
			if c, _ := podContainer(pod, item.ResourceFieldRef.ContainerName); c == nil {
				err = fmt.Errorf("container %s not found", item.ResourceFieldRef.ContainerName)
			} else {
				val, err = resourceField(c, item.ResourceFieldRef, k.allocatable)
			}
		}
		if err != nil {
			return err
		}
		files[item.Path] = volumeFile{data: stringBytes(val), mode: itemMode(item.Mode, mode)}
	}
	return nil
}

// stringBytes is s's bytes without a copy; they must not be changed.
func stringBytes(s string) []byte {
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

// defaultTokenExpiration is a projected service account token's lifetime
// when the pod does not say (as upstream: one hour).
const defaultTokenExpiration = int64(3600)

// projectedFiles adds the files of a projected volume: its configMap,
// secret, downwardAPI and serviceAccountToken sources merged into one
// directory. A token is requested through the TokenRequest API, bound to
// the pod, for the pod's service account. Every source is tried; the
// error names each failing one, as upstream's aggregate ("[a, b]" for
// more than one).
func (k *Kubelet) projectedFiles(ctx context.Context, src clientEnvSource, rec *podRecord, pod *v1.Pod, dir, volume string, pv *v1.ProjectedVolumeSource, files map[string]volumeFile) error {
	mode := fileMode(pv.DefaultMode)
	var errs []error
	for i, s := range pv.Sources {
		var err error
		switch {
		case s.ConfigMap != nil:
			err = k.configMapFiles(src, pod, s.ConfigMap.Name, s.ConfigMap.Items, s.ConfigMap.Optional, mode, files)
		case s.Secret != nil:
			err = k.secretFiles(src, pod, s.Secret.Name, s.Secret.Items, s.Secret.Optional, mode, files)
		case s.DownwardAPI != nil:
			err = k.downwardAPIFiles(pod, s.DownwardAPI.Items, mode, files)
		case s.ServiceAccountToken != nil:
			err = k.serviceAccountTokenFile(ctx, rec, pod, dir, tokenKey{volume, i}, s.ServiceAccountToken, mode, files)
		default:
			err = fmt.Errorf("projected source %d: only configMap, secret, downwardAPI and serviceAccountToken sources are supported", i)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return utilerrors.NewAggregate(errs)
}

// serviceAccountTokenFile adds the token file of a projection, reusing
// the pod's current token until it is due as upstream's token manager
// decides (80% of its lifetime or 24 hours after it was issued, less a
// jitter of 0–9 s drawn at each check: tokenRefreshAt). The token itself is not kept
// in memory: until it is due, the file the volume (dir) holds is kept as
// it is (a keep file: copied when another file of the volume changes),
// and the token is fetched anew if that file is gone or empty.
//
// As upstream's projected plugin, the token file is owned by the user all
// the pod's containers run as (podFSUser) and its mode is 0600 when that
// user or the pod's fsGroup is set (fsGroup ownership then adds group
// read: 0640), the volume's defaultMode otherwise.
func (k *Kubelet) serviceAccountTokenFile(ctx context.Context, rec *podRecord, pod *v1.Pod, dir string, key tokenKey, p *v1.ServiceAccountTokenProjection, mode uint32, files map[string]volumeFile) error {
	f := volumeFile{mode: mode}
	if fsUser := podFSUser(pod); fsUser != nil || podFSGroup(pod) != nil {
		f.mode = 0o600
		if fsUser != nil {
			f.owner = *fsUser
		}
	}
	now := k.clock.Now()
	if refreshAt, ok := rec.tokenRefresh(key); ok && !now.After(refreshAt.Add(-credentialprovider.TokenJitter(tokenJitterRand()))) {
		// Not due: the token written last time stays.
		if path, err := volumeFilePath(dir, p.Path); err == nil && isNonEmptyFile(path) {
			f.keep = true
			files[p.Path] = f
			return nil
		}
	}
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	exp := defaultTokenExpiration
	if p.ExpirationSeconds != nil {
		exp = *p.ExpirationSeconds
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: &exp,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
	}}
	if p.Audience != "" {
		req.Spec.Audiences = []string{p.Audience}
	}
	tr, err := k.client.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, sa, req, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("failed to fetch token: %w", err)
	}
	if tr.Status.Token == "" {
		return fmt.Errorf("failed to fetch token: the API server returned an empty token for service account %s/%s", pod.Namespace, sa)
	}
	rec.setTokenRefresh(key, tokenRefreshAt(tr, now, exp))
	f.data = stringBytes(tr.Status.Token)
	files[p.Path] = f
	return nil
}

// tokenJitterRand draws the jitter of each projected token's refresh
// check (credentialprovider.TokenJitter); tests replace it.
var tokenJitterRand = rand.Float64

// tokenRefreshAt is when a projected token the API server answered tr is
// due, before a check's jitter, as upstream's token manager decides
// (credentialprovider.RefreshAt: 80% of its lifetime or 24 hours after it
// was issued, whichever is first). An answer without the expiration time
// or seconds (a real API server gives both) counts as issued now for the
// requested seconds.
func tokenRefreshAt(tr *authenticationv1.TokenRequest, now time.Time, requested int64) time.Time {
	if tr.Spec.ExpirationSeconds == nil || tr.Status.ExpirationTimestamp.IsZero() {
		tr = &authenticationv1.TokenRequest{
			Spec:   authenticationv1.TokenRequestSpec{ExpirationSeconds: &requested},
			Status: authenticationv1.TokenRequestStatus{ExpirationTimestamp: metav1.NewTime(now.Add(time.Duration(requested) * time.Second))},
		}
	}
	at, _ := credentialprovider.RefreshAt(tr)
	return at
}

// tokenKey names a projected token: its volume (the pod's own string) and
// the source's index in it.
type tokenKey struct {
	volume string
	source int
}

// tokenRefresh is when the projected token of key is due for renewal.
type tokenRefresh struct {
	key tokenKey
	at  int64 // Unix nanoseconds
}

func (rec *podRecord) tokenRefresh(key tokenKey) (time.Time, bool) {
	if rec.hasToken && rec.token.key == key {
		return time.Unix(0, rec.token.at), true
	}
	for _, t := range rec.x().moreTokens {
		if t.key == key {
			return time.Unix(0, t.at), true
		}
	}
	return time.Time{}, false
}

func (rec *podRecord) setTokenRefresh(key tokenKey, at time.Time) {
	switch {
	case !rec.hasToken:
		rec.token, rec.hasToken = tokenRefresh{key: key, at: at.UnixNano()}, true
		return
	case rec.token.key == key:
		rec.token.at = at.UnixNano()
		return
	}
	x := rec.more()
	for i := range x.moreTokens {
		if x.moreTokens[i].key == key {
			x.moreTokens[i].at = at.UnixNano()
			return
		}
	}
	x.moreTokens = append(x.moreTokens, tokenRefresh{key: key, at: at.UnixNano()})
}

// project adds the keys of a Secret volume to files: all keys, or the
// listed items at their paths.
func project(data map[string][]byte, items []v1.KeyToPath, optional bool, mode uint32, files map[string]volumeFile) error {
	if len(items) == 0 {
		for key, val := range data {
			files[key] = volumeFile{data: val, mode: mode}
		}
		return nil
	}
	for _, it := range items {
		val, ok := data[it.Key]
		if !ok {
			if optional {
				continue
			}
			return missingKey(it.Key)
		}
		files[it.Path] = volumeFile{data: val, mode: itemMode(it.Mode, mode)}
	}
	return nil
}

// missingKey is the error of an item naming a key the object lacks.
func missingKey(key string) error {
	return fmt.Errorf("configured to use key %q, but it does not exist", key)
}

// volumeFilePath is where rel lives in a volume directory; rel must stay
// inside it.
func volumeFilePath(dir, rel string) (string, error) {
	clean := filepath.Clean(rel)
	if filepath.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") {
		return "", fmt.Errorf("invalid path %q", rel)
	}
	return filepath.Join(dir, clean), nil
}

// fileHolds reports whether the file at path holds exactly content. Every
// pod's volume files are compared once per sync period, so it reads with
// plain system calls (no os.File: no poller registration, no finalizer)
// into a pooled buffer, one byte more than content: a file that is longer
// does not fill it.
func fileHolds(path string, content []byte) bool {
	fd, err := openReadOnly(path)
	if err != nil {
		return false
	}
	defer syscall.Close(fd)
	return fdHolds(fd, content)
}

// fdHolds reports whether the open file fd holds exactly content (read
// from its current offset), as fileHolds.
func fdHolds(fd int, content []byte) bool {
	bp := compareBufs.Get().(*[]byte)
	defer compareBufs.Put(bp)
	if cap(*bp) < len(content)+1 {
		*bp = make([]byte, len(content)+1)
	}
	buf := (*bp)[:len(content)+1]
	n := 0
	for n < len(buf) {
		m, err := syscall.Read(fd, buf[n:])
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return false
		}
		if m == 0 {
			break // end of file
		}
		n += m
	}
	return n == len(content) && bytes.Equal(buf[:n], content)
}

// openReadOnly opens path for reading with open(2).
func openReadOnly(path string) (int, error) {
	for {
		fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if !errors.Is(err, syscall.EINTR) {
			return fd, err
		}
	}
}

// isDir and isNonEmptyFile stat path with stat(2) (no os.FileInfo made):
// the periodic volume refresh asks them of every pod.
func isDir(path string) bool {
	var st syscall.Stat_t
	return syscall.Stat(path, &st) == nil && st.Mode&syscall.S_IFMT == syscall.S_IFDIR
}

func isNonEmptyFile(path string) bool {
	var st syscall.Stat_t
	return syscall.Stat(path, &st) == nil && st.Mode&syscall.S_IFMT == syscall.S_IFREG && st.Size > 0
}

var compareBufs = sync.Pool{New: func() any { return new([]byte) }}

// mounts are the CRI mounts of a container's volumeMounts; env is the
// container's environment (ContainerEnv), which a subPathExpr is expanded
// with, as upstream's makeMounts is given it.
func (k *Kubelet) mounts(pod *v1.Pod, c *v1.Container, env []EnvVar) ([]*runtimeapi.Mount, error) {
	var out []*runtimeapi.Mount
	for i, vm := range c.VolumeMounts {
		var vol *v1.Volume
		for i := range pod.Spec.Volumes {
			if pod.Spec.Volumes[i].Name == vm.Name {
				vol = &pod.Spec.Volumes[i]
			}
		}
		if vol == nil {
			return nil, fmt.Errorf("cannot find volume %q to mount into container %q", vm.Name, c.Name)
		}
		host := ""
		if vol.HostPath != nil {
			host = vol.HostPath.Path
		} else {
			host = k.volumeDir(pod.UID, volumePlugin(vol), vol.Name)
		}
		subPath := vm.SubPath
		if vm.SubPathExpr != "" {
			var err error
			if subPath, err = expandSubPathExpr(vm.SubPathExpr, env); err != nil {
				return nil, err
			}
		}
		if subPath != "" {
			// Upstream's makeMounts refuses these before anything (the
			// API server's validation too, but not of an expansion).
			if filepath.IsAbs(subPath) {
				return nil, fmt.Errorf("error SubPath `%s` must not be an absolute path", subPath)
			}
			for item := range strings.SplitSeq(subPath, "/") {
				if item == ".." {
					return nil, fmt.Errorf("unable to provision SubPath `%s`: must not contain '..'", subPath)
				}
			}
			volPath := host
			host = filepath.Join(volPath, filepath.Clean("/"+subPath))
			if err := k.makeMissingSubPath(c, vm.Name, volPath, host); err != nil {
				return nil, err
			}
			var sub string
			var err error
			if k.bindsSubPaths() {
				sub, err = bindSubPath(k.podDir(pod.UID), vm.Name, c.Name, i, host, volPath)
			} else {
				sub, err = k.prepareSubPath(pod, c, vm.Name, i, volPath, host, writtenVolume(vol))
			}
			if err != nil {
				// As upstream, the details (host paths) only in the log.
				k.log.Error("Failed to prepare subPath for volumeMount of the container", "containerName", c.Name, "volumeMountName", vm.Name, "err", err)
				return nil, fmt.Errorf("failed to prepare subPath for volumeMount %q of container %q", vm.Name, c.Name)
			}
			host = sub
		}
		// A volume the kubelet writes is read-only in the container, as
		// upstream's plugins for the four say (Attributes.ReadOnly).
		out = append(out, &runtimeapi.Mount{ContainerPath: vm.MountPath, HostPath: host, Readonly: vm.ReadOnly || writtenVolume(vol)})
	}
	return out, nil
}

// expandSubPathExpr is a subPathExpr expanded with the container's
// environment as upstream's ExpandContainerVolumeMounts: $(NAME) is the
// value of the last variable NAME of env, $$ a literal $, and anything
// else stays as written; a reference to a variable env does not have, or
// has empty, is an error naming each such variable once, sorted.
func expandSubPathExpr(expr string, env []EnvVar) (string, error) {
	var missing []string
	out := expandRefs(expr, func(name string) (string, bool) {
		value := ""
		for j := len(env) - 1; j >= 0; j-- {
			if env[j].Name == name {
				value = env[j].Value
				break
			}
		}
		if value == "" && !slices.Contains(missing, name) {
			missing = append(missing, name)
		}
		return value, true
	})
	if len(missing) > 0 {
		slices.Sort(missing)
		return "", fmt.Errorf("missing value for %s", strings.Join(missing, ", "))
	}
	return out, nil
}

// makeMissingSubPath creates the subPath host of the volume at volPath
// when it is missing, as a directory with the volume directory's mode,
// as upstream's makeMounts does for every volume (SafeMakeDir with the
// volume's mode) before mounting it; never outside the volume (a
// container's symlink in an emptyDir).
func (k *Kubelet) makeMissingSubPath(c *v1.Container, volume, volPath, host string) error {
	if _, err := os.Stat(host); !errors.Is(err, os.ErrNotExist) {
		return nil
	}
	st, err := os.Stat(volPath)
	if err == nil {
		err = safeMakeDir(host, volPath, st.Mode())
	}
	if err != nil {
		k.log.Error("Failed to create subPath directory for volumeMount of the container", "containerName", c.Name, "volumeMountName", volume, "err", err)
		return fmt.Errorf("failed to create subPath directory for volumeMount %q of container %q", volume, c.Name)
	}
	return nil
}

// writtenVolume reports whether v is written by the atomic writer.
func writtenVolume(v *v1.Volume) bool {
	return v.ConfigMap != nil || v.Secret != nil || v.DownwardAPI != nil || v.Projected != nil
}

// prepareSubPath is the host path of a subPath mount (the index-th
// volume mount of container c, of the volume named volume) of the volume
// at volPath, as upstream's kubelet makes it (PrepareSafeSubpath): the
// subPath host resolved through the volume's symlinks, where it must
// stay inside the volume (upstream: "subpath ... not within volume path
// ..."; a container may have made a symlink in an emptyDir), and fixed
// there. For a configMap, secret, downwardAPI or projected volume
// (written), as upstream's bind mount, the container keeps the content it
// started with when the payload changes (a subPath mount receives no
// updates) and a container started later gets the current one. host is
// the subPath in the volume (made by makeMissingSubPath if missing).
// This is the simulated runtime's kubelet's, which mounts nothing: a real
// runtime's bind-mounts the subPath opened without following symlinks at
// <pod dir>/volume-subpaths/<volume>/<container>/<index>, as upstream's
// (bindSubPath, subpath.go). Here a written volume's file is hard-linked
// there (the old data directory's removal then leaves the container's
// file as it was), and a directory, or any subPath of another volume, is
// passed resolved (a link swapped in after this check would be followed).
func (k *Kubelet) prepareSubPath(pod *v1.Pod, c *v1.Container, volume string, index int, volPath, host string, written bool) (string, error) {
	resolved, _, err := resolveWithin(host, volPath)
	if err != nil {
		return "", err
	}
	if !written {
		return resolved, nil
	}
	var st syscall.Stat_t
	if err := syscall.Stat(resolved, &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return resolved, nil
	}
	target := filepath.Join(k.podDir(pod.UID), "volume-subpaths", volume, c.Name, strconv.Itoa(index))
	if err := os.MkdirAll(filepath.Dir(target), 0o750); err != nil {
		return "", fmt.Errorf("error creating directory %s: %w", filepath.Dir(target), err)
	}
	if err := os.Remove(target); err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("error removing the old subpath %s: %w", target, err)
	}
	if err := os.Link(resolved, target); err != nil {
		return "", fmt.Errorf("error linking subpath %s to %s: %w", resolved, target, err)
	}
	return target, nil
}

// resolveWithin resolves the symlinks of a subPath's host path and of its
// volume's, and refuses a subPath that resolves outside the volume.
func resolveWithin(path, volumePath string) (resolved, base string, err error) {
	if base, err = filepath.EvalSymlinks(volumePath); err != nil {
		return "", "", fmt.Errorf("error resolving symlinks in %q: %w", volumePath, err)
	}
	if resolved, err = filepath.EvalSymlinks(path); err != nil {
		return "", "", fmt.Errorf("error resolving symlinks in %q: %w", path, err)
	}
	if !pathWithin(resolved, base) {
		return "", "", fmt.Errorf("subpath %q not within volume path %q", resolved, base)
	}
	return resolved, base, nil
}

// pathWithin reports whether the clean path p is base or under it.
func pathWithin(p, base string) bool {
	rel, err := filepath.Rel(base, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// removePodDir deletes the pod's directory (volumes) once it is gone,
// then what the node's credentials hold for it (forgetPodCredentials).
func (k *Kubelet) removePodDir(uid types.UID) error {
	dir := k.podDir(uid)
	if k.bindsSubPaths() {
		// Its subPath bind mounts first (subpath.go): what RemoveAll
		// found mounted it would empty (a hostPath's directory).
		if err := cleanPodSubPaths(dir); err != nil {
			return fmt.Errorf("removing pod directory of %s: %w", uid, err)
		}
	}
	if k.mountsTmpfs() {
		// Then its volumes, tmpfs unmounted (memoryvolumes.go), and
		// nothing removed while a volume directory is still a mount
		// point, as upstream's cleanupOrphanedPodDirs.
		if err := tearDownPodDirVolumes(dir); err != nil {
			return fmt.Errorf("removing pod directory of %s: %w", uid, err)
		}
		if k.podVolumesMounted(uid) {
			return fmt.Errorf("removing pod directory of %s: orphaned pod found, but volumes are not cleaned up", uid)
		}
		// What is left of the volumes directory goes directories only
		// (memoryvolumes.go), as upstream's removeOrphanedPodVolumeDirs.
		if err := removeDirsOnly(filepath.Join(dir, "volumes")); err != nil {
			return fmt.Errorf("removing pod directory of %s: orphaned pod found, but error occurred when trying to remove the volumes dir: %w", uid, err)
		}
	}
	if err := os.RemoveAll(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing pod directory of %s: %w", uid, err)
	}
	k.forgetPodCredentials(uid)
	return nil
}

// refreshVolumes rewrites a running pod's configMap, secret, downwardAPI
// and projected volumes once per sync period, so changed ConfigMaps and
// Secrets reach running containers and projected tokens are renewed
// (upstream's kubelet remounts these volumes on its periodic pod sync).
func (k *Kubelet) refreshVolumes(ctx context.Context, rec *podRecord, pod *v1.Pod, a podsync.Actions, now time.Time) error {
	if len(pod.Spec.Volumes) == 0 || rec.ending(pod) {
		// Deleted or terminated, or being: its volumes are torn down, not
		// set up again (tearDownTerminatedVolumes), as upstream's volume
		// manager drops a terminated pod from its desired state.
		return nil
	}
	if a.CreateSandbox || len(a.ContainersToStart) > 0 {
		rec.volumesAt = now.UnixNano() // execute just set them up
		return nil
	}
	if rec.volumesAt != 0 && now.Sub(time.Unix(0, rec.volumesAt)) < k.cfg.SyncFrequency {
		return nil
	}
	rec.volumesAt = now.UnixNano()
	return k.setUpVolumes(ctx, rec, pod, false)
}
