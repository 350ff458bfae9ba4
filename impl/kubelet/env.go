package kubelet

import (
	"context"
	"fmt"
	"math"
	"strings"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
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
		v, err := resourceField(c, vf.ResourceFieldRef, allocatable)
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

// resourceField is the downward API's resourceFieldRef: a request or limit
// divided by the divisor and rounded up; an unset limit is the node's
// allocatable.
func resourceField(c *v1.Container, ref *v1.ResourceFieldSelector, allocatable v1.ResourceList) (string, error) {
	kind, name, ok := strings.Cut(ref.Resource, ".")
	if !ok || (kind != "limits" && kind != "requests") {
		return "", fmt.Errorf("unsupported resourceFieldRef %q", ref.Resource)
	}
	rn := v1.ResourceName(name)
	list := c.Resources.Requests
	if kind == "limits" {
		list = c.Resources.Limits
	}
	q, ok := list[rn]
	if !ok && kind == "limits" {
		q, ok = allocatable[rn]
	}
	if !ok {
		q = resource.Quantity{}
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	if rn == v1.ResourceCPU {
		v := math.Ceil(float64(q.MilliValue()) / float64(divisor.MilliValue()))
		return fmt.Sprintf("%d", int64(v)), nil
	}
	v := math.Ceil(float64(q.Value()) / float64(divisor.Value()))
	return fmt.Sprintf("%d", int64(v)), nil
}

// expand replaces $(NAME) with NAME's value when defined (in vals, else
// in services); $$ is a literal $ and undefined references stay as
// written.
func expand(s string, vals, services map[string]string) string {
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
			name := s[i+2 : i+2+end]
			if v, ok := vals[name]; ok {
				b.WriteString(v)
			} else if v, ok := services[name]; ok {
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
