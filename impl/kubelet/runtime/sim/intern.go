package sim

import (
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeproof/kubeproof/impl/intern"
)

// A simulated container keeps what its kubelet created it with (the
// environment and mounts its shell sees, its security context, its
// annotations). Containers of one workload are created with equal
// environments (the service variables of their namespace), equal
// annotations and equal security contexts, so the simulated runtimes of
// one process keep one copy of each: the kubelet builds a fresh
// configuration for every container, and this table swaps its parts for
// the shared equal ones. Kept parts are never changed (the shell only
// reads the environment). The table is bounded like impl/intern's.

const maxShared = 4096

type sharedParts struct {
	mu       sync.Mutex
	envs     map[string][]*runtimeapi.KeyValue
	maps     map[string]map[string]string
	security map[string]*runtimeapi.LinuxContainerSecurityContext
	sandbox  map[string]*runtimeapi.LinuxSandboxSecurityContext
	linux    map[string]*runtimeapi.LinuxPodSandboxConfig
	res      map[string]*runtimeapi.LinuxContainerResources
	meta     map[string]*runtimeapi.ContainerMetadata
	specs    map[containerSpecKey]*containerSpec
	strs     map[string]string
	scratch  []byte // where shareEncoded encodes (guarded by mu)
}

var shared = newSharedParts()

func newSharedParts() *sharedParts {
	return &sharedParts{
		envs:     map[string][]*runtimeapi.KeyValue{},
		maps:     map[string]map[string]string{},
		security: map[string]*runtimeapi.LinuxContainerSecurityContext{},
		sandbox:  map[string]*runtimeapi.LinuxSandboxSecurityContext{},
		linux:    map[string]*runtimeapi.LinuxPodSandboxConfig{},
		res:      map[string]*runtimeapi.LinuxContainerResources{},
		meta:     map[string]*runtimeapi.ContainerMetadata{},
		specs:    map[containerSpecKey]*containerSpec{},
		strs:     map[string]string{},
	}
}

func share[T any](mu *sync.Mutex, table map[string]T, key string, v T) T {
	return intern.Lookup(mu, table, maxShared, key, v)
}

// env returns the shared environment equal to kvs (order matters: it is
// the order the shell lists them in).
func (s *sharedParts) env(kvs []*runtimeapi.KeyValue) []*runtimeapi.KeyValue {
	if len(kvs) == 0 {
		return kvs
	}
	var buf [keyBuffer]byte
	b := buf[:0]
	for _, kv := range kvs {
		b = append(b, kv.Key...)
		b = append(b, 0)
		b = append(b, kv.Value...)
		b = append(b, 0)
	}
	return intern.LookupBytes(&s.mu, s.envs, maxShared, b, kvs)
}

// keyBuffer is the size of the stack buffers keys are built in (a longer
// key moves to the heap as append grows it).
const keyBuffer = 1024

// appendMapKey appends the key of the entries of m whose keys skip does
// not reject, in key order, to b. m has at most 8 entries.
func appendMapKey(b []byte, m map[string]string, skip func(string) bool) []byte {
	var kb [8]string
	keys := kb[:0]
	for k := range m {
		if skip == nil || !skip(k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		b = append(b, k...)
		b = append(b, 0)
		b = append(b, m[k]...)
		b = append(b, 0)
	}
	return b
}

// stringMap returns the shared map equal to m (annotations).
func (s *sharedParts) stringMap(m map[string]string) map[string]string {
	if len(m) == 0 || len(m) > 8 {
		return m
	}
	var buf [keyBuffer]byte
	return intern.LookupBytes(&s.mu, s.maps, maxShared, appendMapKey(buf[:0], m, nil), m)
}

// sharedStringMap returns the shared map equal to the entries of m whose
// keys skip does not reject, and whether there is one; a miss is for the
// caller to build and store with stringMap.
func (s *sharedParts) sharedStringMap(m map[string]string, skip func(string) bool) (map[string]string, bool) {
	var buf [keyBuffer]byte
	key := appendMapKey(buf[:0], m, skip)
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.maps[string(key)]
	return v, ok
}

// securityContext returns the shared security context equal to sc.
func (s *sharedParts) securityContext(sc *runtimeapi.LinuxContainerSecurityContext) *runtimeapi.LinuxContainerSecurityContext {
	if sc == nil {
		return nil
	}
	return shareEncoded(s, s.security, sc, sc)
}

// shareEncoded returns the value table holds under m's deterministic
// encoding, storing v there first if there is none (and the table has
// room); v itself if m cannot be encoded. The encoding is made in
// s.scratch, which s.mu guards, so a value seen before costs no
// allocation.
func shareEncoded[T any](s *sharedParts, table map[string]T, m proto.Message, v T) T {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, err := proto.MarshalOptions{Deterministic: true}.MarshalAppend(s.scratch[:0], m)
	if err != nil {
		return v
	}
	s.scratch = b
	return intern.LookupBytesLocked(table, maxShared, b, v)
}

// str returns the kept copy of s (a copy of its own, not of a longer
// string s may be part of).
func (s *sharedParts) str(v string) string {
	s.mu.Lock()
	kept, ok := s.strs[v]
	s.mu.Unlock()
	if ok {
		return kept
	}
	c := strings.Clone(v)
	return share(&s.mu, s.strs, c, c)
}

// containerMeta returns the shared container metadata equal to m (a
// container's name and attempt: "app", 0 for most of a workload's).
func (s *sharedParts) containerMeta(m *runtimeapi.ContainerMetadata) *runtimeapi.ContainerMetadata {
	if len(m.ProtoReflect().GetUnknown()) != 0 {
		return m
	}
	var buf [keyBuffer]byte
	key := append(buf[:0], m.Name...)
	key = append(key, 0)
	key = strconv.AppendUint(key, uint64(m.Attempt), 10)
	return intern.LookupBytes(&s.mu, s.meta, maxShared, key, m)
}

// sandboxLinux returns a sandbox's Linux config to keep, and which of the
// kubelet's cgroup parents its own is (podCgroupParents: for its pod's QoS
// class, "/kubepods/pod<podUID>", "/kubepods/burstable/pod<podUID>" or
// "/kubepods/besteffort/pod<podUID>"), left out (sandbox.linuxConfig puts
// it back), or 0 when it is another and kept. What is kept
// is then shared by the sandboxes whose configs are otherwise equal (their
// security contexts, sysctls, resources and overhead); else it is the
// sandbox's own cgroup parent with the shared security context, sysctls,
// resources and overhead equal to its own (the kubelet makes resources and
// overhead anew for every sandbox; a workload's are equal).
func (s *sharedParts) sandboxLinux(l *runtimeapi.LinuxPodSandboxConfig, podUID string) (*runtimeapi.LinuxPodSandboxConfig, uint8) {
	if l == nil {
		return nil, 0
	}
	out := &runtimeapi.LinuxPodSandboxConfig{
		CgroupParent: l.CgroupParent, Overhead: s.resources(l.Overhead), Resources: s.resources(l.Resources),
		SecurityContext: l.SecurityContext,
	}
	if len(l.Sysctls) > 0 { // most pods set none: keep no empty map
		out.Sysctls = s.stringMap(l.Sysctls)
	}
	if l.SecurityContext != nil {
		out.SecurityContext = shareEncoded(s, s.sandbox, l.SecurityContext, l.SecurityContext)
	}
	kind := podCgroupParentKind(l.CgroupParent, podUID)
	if kind == 0 || len(l.ProtoReflect().GetUnknown()) != 0 {
		return out, 0
	}
	out.CgroupParent = "" // put back by sandbox.linuxConfig, shared or not
	return shareEncoded(s, s.linux, out, out), kind
}

// podCgroupParentKind is which of podCgroupParents parent is, followed by
// podUID (0: none; allocates nothing).
func podCgroupParentKind(parent, podUID string) uint8 {
	if podUID == "" {
		return 0
	}
	for i := 1; i < len(podCgroupParents); i++ {
		if rest, ok := strings.CutPrefix(parent, podCgroupParents[i]); ok && rest == podUID {
			return uint8(i)
		}
	}
	return 0
}

// resources returns the shared resources equal to r (a sandbox's
// resources or overhead, a container's cgroup values).
func (s *sharedParts) resources(r *runtimeapi.LinuxContainerResources) *runtimeapi.LinuxContainerResources {
	if r == nil {
		return nil
	}
	return shareEncoded(s, s.res, r, r)
}

// containerSpec is what a container is created with that equals the other
// containers of its workload: its metadata, image, annotations, faults,
// environment and security context. A container record points to one
// shared copy (eight bytes instead of some ninety in every record).
type containerSpec struct {
	meta        *runtimeapi.ContainerMetadata
	image       string
	imageRef    string
	annotations map[string]string
	faults      *faults // noFaults for a container without faults
	env         []*runtimeapi.KeyValue
	security    *runtimeapi.LinuxContainerSecurityContext
	// stdinOnce: the main process (simulated as `cat`, see stream.go)
	// ends when the stdin of the first attach closes (CRI stdin_once).
	stdinOnce bool
	// resources are the cgroup values it was created with (shared:
	// sharedParts.resources); an in-place resize's are the container's
	// own (containerMore.resources).
	resources *runtimeapi.LinuxContainerResources
}

// containerSpecKey identifies a containerSpec by its parts, which the
// other tables have already swapped for their shared copies: equal parts
// are the same pointers, so identity is equality. A part that was not
// shared (its table full) makes a key of its own, and its spec is then
// not shared either; the key's pointers keep the parts alive while the
// table holds them.
type containerSpecKey struct {
	meta        *runtimeapi.ContainerMetadata
	image       string
	imageRef    string
	annotations unsafe.Pointer // the map's
	faults      *faults
	env         *(*runtimeapi.KeyValue) // the slice's first element
	envLen      int
	security    *runtimeapi.LinuxContainerSecurityContext
	stdinOnce   bool
	resources   *runtimeapi.LinuxContainerResources
}

// containerSpec returns the shared spec equal to v, whose parts are the
// shared ones.
func (s *sharedParts) containerSpec(v containerSpec) *containerSpec {
	k := containerSpecKey{
		meta: v.meta, image: v.image, imageRef: v.imageRef, annotations: reflect.ValueOf(v.annotations).UnsafePointer(),
		faults: v.faults, env: unsafe.SliceData(v.env), envLen: len(v.env), security: v.security, stdinOnce: v.stdinOnce,
		resources: v.resources,
	}
	s.mu.Lock()
	kept, ok := s.specs[k]
	s.mu.Unlock()
	if ok {
		return kept
	}
	spec := v // on the heap only for a spec not kept yet (&v would put every v there)
	return intern.Lookup(&s.mu, s.specs, maxShared, k, &spec)
}
