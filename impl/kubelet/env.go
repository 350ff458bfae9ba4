package kubelet

import (
	"context"
	"fmt"
	"maps"
	"math"
	"math/big"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
)

// reasonCreateContainerConfigErr is the waiting reason when a container's
// configuration (env from a ConfigMap or Secret) cannot be built.
const reasonCreateContainerConfigErr = "CreateContainerConfigError"

// EnvSource looks up the ConfigMaps and Secrets env refers to.
type EnvSource interface {
	ConfigMap(namespace, name string) (*v1.ConfigMap, error)
	Secret(namespace, name string) (*v1.Secret, error)
}

// ServiceEnvSource is an EnvSource that also gives a pod's service
// variables (ServiceEnv); ContainerEnv adds them when its source has them.
type ServiceEnvSource interface {
	EnvSource
	ServiceEnv(pod *v1.Pod) ([]EnvVar, error)
}

// EnvVar is one resolved variable.
type EnvVar struct{ Name, Value string }

// ContainerEnv resolves a container's environment as upstream does:
// envFrom sources first (with prefixes), then env in order (later
// definitions win), values expanded with $(VAR) references to variables
// defined before them ($$ escapes). Missing non-optional ConfigMaps,
// Secrets or keys are errors with upstream's messages. When src is a
// ServiceEnvSource, the service variables follow, except those the
// container defines itself, and env values may refer to them.
func ContainerEnv(pod *v1.Pod, c *v1.Container, src EnvSource, allocatable v1.ResourceList) ([]EnvVar, error) {
	var services []EnvVar
	if ss, ok := src.(ServiceEnvSource); ok {
		var err error
		if services, err = ss.ServiceEnv(pod); err != nil {
			return nil, err
		}
	}
	serviceVals := make(map[string]string, len(services))
	for _, e := range services {
		serviceVals[e.Name] = e.Value
	}
	var order []string
	vals := map[string]string{}
	set := func(k, v string) {
		if _, ok := vals[k]; !ok {
			order = append(order, k)
		}
		vals[k] = v
	}
	for _, ef := range c.EnvFrom {
		switch {
		case ef.ConfigMapRef != nil:
			cm, err := src.ConfigMap(pod.Namespace, ef.ConfigMapRef.Name)
			if err != nil {
				if apierrors.IsNotFound(err) && ptrTrue(ef.ConfigMapRef.Optional) {
					continue
				}
				return nil, notFoundMessage(err, "configmap", ef.ConfigMapRef.Name)
			}
			for k, v := range cm.Data {
				set(ef.Prefix+k, v)
			}
		case ef.SecretRef != nil:
			s, err := src.Secret(pod.Namespace, ef.SecretRef.Name)
			if err != nil {
				if apierrors.IsNotFound(err) && ptrTrue(ef.SecretRef.Optional) {
					continue
				}
				return nil, notFoundMessage(err, "secret", ef.SecretRef.Name)
			}
			for k, v := range s.Data {
				set(ef.Prefix+k, string(v))
			}
		}
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			set(e.Name, expand(e.Value, vals, serviceVals))
			continue
		}
		v, ok, err := valueFrom(pod, c, e.ValueFrom, src, allocatable)
		if err != nil {
			return nil, err
		}
		if ok {
			set(e.Name, v)
		}
	}
	out := make([]EnvVar, 0, len(order)+len(services))
	for _, k := range order {
		out = append(out, EnvVar{Name: k, Value: vals[k]})
	}
	for _, e := range services {
		if _, own := vals[e.Name]; !own {
			out = append(out, e)
		}
	}
	return out, nil
}

func ptrTrue(b *bool) bool { return b != nil && *b }

func notFoundMessage(err error, kind, name string) error {
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("%s %q not found", kind, name)
	}
	return fmt.Errorf("reading %s %q: %w", kind, name, err)
}

func valueFrom(pod *v1.Pod, c *v1.Container, vf *v1.EnvVarSource, src EnvSource, allocatable v1.ResourceList) (string, bool, error) {
	switch {
	case vf.ConfigMapKeyRef != nil:
		ref := vf.ConfigMapKeyRef
		cm, err := src.ConfigMap(pod.Namespace, ref.Name)
		if err != nil {
			if apierrors.IsNotFound(err) && ptrTrue(ref.Optional) {
				return "", false, nil
			}
			return "", false, notFoundMessage(err, "configmap", ref.Name)
		}
		v, ok := cm.Data[ref.Key]
		if !ok {
			if ptrTrue(ref.Optional) {
				return "", false, nil
			}
			return "", false, fmt.Errorf("couldn't find key %s in ConfigMap %s/%s", ref.Key, pod.Namespace, ref.Name)
		}
		return v, true, nil
	case vf.SecretKeyRef != nil:
		ref := vf.SecretKeyRef
		s, err := src.Secret(pod.Namespace, ref.Name)
		if err != nil {
			if apierrors.IsNotFound(err) && ptrTrue(ref.Optional) {
				return "", false, nil
			}
			return "", false, notFoundMessage(err, "secret", ref.Name)
		}
		v, ok := s.Data[ref.Key]
		if !ok {
			if ptrTrue(ref.Optional) {
				return "", false, nil
			}
			return "", false, fmt.Errorf("couldn't find key %s in Secret %s/%s", ref.Key, pod.Namespace, ref.Name)
		}
		return string(v), true, nil
	case vf.FieldRef != nil:
		v, err := podField(pod, vf.FieldRef.FieldPath)
		return v, err == nil, err
	case vf.ResourceFieldRef != nil:
		v, err := envResourceField(pod, c, vf.ResourceFieldRef, allocatable)
		return v, err == nil, err
	}
	return "", false, nil
}

// podField is the downward API's fieldRef.
func podField(pod *v1.Pod, path string) (string, error) {
	if key, ok := bracketKey(path, "metadata.labels"); ok {
		return pod.Labels[key], nil
	}
	if key, ok := bracketKey(path, "metadata.annotations"); ok {
		return pod.Annotations[key], nil
	}
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.hostIP":
		return pod.Status.HostIP, nil
	case "status.podIP":
		return pod.Status.PodIP, nil
	case "status.hostIPs":
		var ips []string
		for _, ip := range pod.Status.HostIPs {
			ips = append(ips, ip.IP)
		}
		return strings.Join(ips, ","), nil
	case "status.podIPs":
		var ips []string
		for _, ip := range pod.Status.PodIPs {
			ips = append(ips, ip.IP)
		}
		return strings.Join(ips, ","), nil
	}
	return "", fmt.Errorf("unsupported fieldRef path %q", path)
}

func bracketKey(path, prefix string) (string, bool) {
	if !strings.HasPrefix(path, prefix+"['") || !strings.HasSuffix(path, "']") {
		return "", false
	}
	return path[len(prefix)+2 : len(path)-2], true
}

// envResourceField is an env var's resourceFieldRef, as upstream's
// kubelet (makeEnvironmentVariables): of the container itself, or of the
// app or init container the ref names (an app container first; "container
// <name> not found" when none), an unset or zero cpu, memory or
// ephemeral-storage limit taken from downwardAPILimitDefaults — except for
// a named init container, whose limits upstream leaves as they are.
func envResourceField(pod *v1.Pod, c *v1.Container, ref *v1.ResourceFieldSelector, allocatable v1.ResourceList) (string, error) {
	defaults := downwardAPILimitDefaults(pod, allocatable)
	if ref.ContainerName != "" {
		var app bool
		if c, app = podContainer(pod, ref.ContainerName); c == nil {
			return "", fmt.Errorf("container %s not found", ref.ContainerName)
		}
		if !app {
			defaults = nil
		}
	}
	return resourceField(c, ref, defaults)
}

// downwardAPILimitDefaults are the limits an env var's resourceFieldRef
// reads where the container sets none, as upstream's
// defaultPodLimitsForDownwardAPI: the node's allocatable, with a non-zero
// pod-level cpu or memory limit (PodLevelResources, on by default) in
// place of the allocatable of that resource when the node reports it.
// Hugepages have no default (see resourceField); a downwardAPI volume
// uses the allocatable alone.
func downwardAPILimitDefaults(pod *v1.Pod, allocatable v1.ResourceList) v1.ResourceList {
	if !resourcehelper.IsPodLevelLimitsSet(pod) {
		return allocatable
	}
	var out v1.ResourceList
	for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
		q, ok := pod.Spec.Resources.Limits[name]
		if _, has := allocatable[name]; !ok || q.IsZero() || !has {
			continue
		}
		if out == nil {
			out = maps.Clone(allocatable)
		}
		out[name] = q
	}
	if out == nil {
		return allocatable
	}
	return out
}

// podContainer is the pod's app container of that name, else its init
// container of that name (app reports which), as upstream's
// findContainerInPod; nil when neither.
func podContainer(pod *v1.Pod, name string) (c *v1.Container, app bool) {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i], true
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i], false
		}
	}
	return nil, false
}

// resourceField is the downward API's resourceFieldRef of container c, as
// upstream's ExtractContainerResourceValue: limits. or requests. of cpu,
// memory, ephemeral-storage or a hugepages-<size>, divided by the divisor
// (1 when unset) and rounded up (resourceValue); a request or limit the
// container does not set is 0, except that an unset or zero cpu, memory
// or ephemeral-storage limit is taken from defaults when it has one
// (upstream's MergeContainerResourceLimits: hugepages, never overcommitted,
// get none). Anything else is upstream's "unsupported container resource"
// error.
func resourceField(c *v1.Container, ref *v1.ResourceFieldSelector, defaults v1.ResourceList) (string, error) {
	unsupported := fmt.Errorf("unsupported container resource : %v", ref.Resource)
	kind, rest, _ := strings.Cut(ref.Resource, ".")
	name := v1.ResourceName(rest)
	switch {
	case kind != "limits" && kind != "requests":
		return "", unsupported
	case name == v1.ResourceCPU, name == v1.ResourceMemory, name == v1.ResourceEphemeralStorage, strings.HasPrefix(rest, v1.ResourceHugePagesPrefix):
	default:
		return "", unsupported
	}
	list := c.Resources.Requests
	if kind == "limits" {
		list = c.Resources.Limits
	}
	q := list[name]
	if kind == "limits" && q.IsZero() && !strings.HasPrefix(rest, v1.ResourceHugePagesPrefix) {
		if d, ok := defaults[name]; ok {
			q = d
		}
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = *resource.NewQuantity(1, resource.DecimalSI)
	}
	return resourceValue(q, divisor), nil
}

// resourceValue is q divided by divisor, rounded up, in decimal, as
// upstream's downward API computes it: exactly (not through float64, which
// loses a byte count past 2^53), "0" for a q or divisor that is not
// positive, at most math.MaxInt64, and without building numbers of
// millions of digits for quantities like 1e1000000.
func resourceValue(q, divisor resource.Quantity) string {
	if q.Sign() <= 0 || divisor.Sign() <= 0 {
		return "0"
	}
	qd, dd := q.AsDec(), divisor.AsDec()
	n, d := new(big.Int).Set(qd.UnscaledBig()), new(big.Int).Set(dd.UnscaledBig())
	qScale, dScale := int64(qd.Scale()), int64(dd.Scale())
	// A value u×10^-s with u of b bits lies in [10^((b-1)·log10 2 - s),
	// 10^(b·log10 2 - s)); bound the ratio's power of ten before scaling.
	const log10of2 = 0.30102999566398120
	lo := func(u *big.Int, s int64) float64 { return float64(u.BitLen()-1)*log10of2 - float64(s) }
	hi := func(u *big.Int, s int64) float64 { return float64(u.BitLen())*log10of2 - float64(s) }
	switch {
	case lo(n, qScale)-hi(d, dScale) > 19.5: // above 10^19 > MaxInt64
		return strconv.FormatInt(math.MaxInt64, 10)
	case hi(n, qScale)-lo(d, dScale) < -1: // below 1/10, so 1 rounded up
		return "1"
	}
	// q/divisor = (n/d)·10^(dScale-qScale).
	if e := dScale - qScale; e > 0 {
		n.Mul(n, new(big.Int).Exp(big.NewInt(10), big.NewInt(e), nil))
	} else if e < 0 {
		d.Mul(d, new(big.Int).Exp(big.NewInt(10), big.NewInt(-e), nil))
	}
	quo, rem := new(big.Int).QuoRem(n, d, new(big.Int))
	if rem.Sign() > 0 {
		quo.Add(quo, big.NewInt(1))
	}
	if !quo.IsInt64() {
		return strconv.FormatInt(math.MaxInt64, 10)
	}
	return quo.String()
}

// expand replaces $(NAME) with NAME's value when defined (in vals, else
// in services); $$ is a literal $ and undefined references stay as
// written.
func expand(s string, vals, services map[string]string) string {
	return expandRefs(s, func(name string) (string, bool) {
		if v, ok := vals[name]; ok {
			return v, true
		}
		v, ok := services[name]
		return v, ok
	})
}

// expandRefs is the $(NAME) expansion upstream applies to env values and
// subPathExpr (third_party/forked/golang/expansion): $(NAME) is lookup's
// value of NAME, or stays as written when lookup has none; $$ is a literal
// $; any other $ stays.
func expandRefs(s string, lookup func(name string) (string, bool)) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteByte(s[i])
				continue
			}
			if v, ok := lookup(s[i+2 : i+2+end]); ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// clientEnvSource reads ConfigMaps and Secrets through the kubelet's object
// manager (objectcache.go): from the watch of each object its pods use.
type clientEnvSource struct {
	ctx context.Context
	k   *Kubelet
}

func (s clientEnvSource) ConfigMap(ns, name string) (*v1.ConfigMap, error) {
	return s.k.objects.configMap(s.ctx, ns, name)
}

func (s clientEnvSource) Secret(ns, name string) (*v1.Secret, error) {
	return s.k.objects.secret(s.ctx, ns, name)
}

// ServiceEnv is the pod's service variables (serviceenv.go).
func (s clientEnvSource) ServiceEnv(pod *v1.Pod) ([]EnvVar, error) {
	return s.k.serviceEnv(s.ctx, pod)
}
