package registry

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestContainerPortsAsUpstream: container ports are checked as upstream's
// validateContainerPorts and checkHostPortConflicts: an invalid name is
// not also a duplicate; host ports conflict by protocol, host IP and port
// (reported as "<protocol>/<hostIP>/<port>"), across the app containers
// and within each init container (named initContainers[0], as upstream
// checks each as a list of one), never between an init and an app
// container.
func TestContainerPortsAsUpstream(t *testing.T) {
	r := find(t, coreV1, "pods")
	port := func(name string, host int32, ip string) corev1.ContainerPort {
		return corev1.ContainerPort{Name: name, ContainerPort: 80, HostPort: host, HostIP: ip}
	}
	cases := []struct {
		name    string
		mutate  func(s *corev1.PodSpec)
		want    []string
		details []string
	}{
		{"an invalid name twice", func(s *corev1.PodSpec) {
			s.Containers[0].Ports = []corev1.ContainerPort{port("Bad_Name", 0, ""), port("Bad_Name", 0, "")}
		}, []string{invalid + " spec.containers[0].ports[0].name", invalid + " spec.containers[0].ports[1].name"}, nil},
		{"a host port across app containers", func(s *corev1.PodSpec) {
			s.Containers[0].Ports = []corev1.ContainerPort{port("", 8080, "")}
			s.Containers = append(s.Containers, corev1.Container{Name: "b", Image: "nginx", Ports: []corev1.ContainerPort{port("", 8080, "")}})
		}, []string{duplicate + " spec.containers[1].ports[0].hostPort"},
			[]string{`spec.containers[1].ports[0].hostPort: Duplicate value: "TCP//8080"`}},
		{"other host IPs do not conflict", func(s *corev1.PodSpec) {
			s.Containers[0].Ports = []corev1.ContainerPort{port("", 8080, "10.0.0.1"), port("", 8080, "10.0.0.2")}
		}, nil, nil},
		{"init containers: each on its own, reported as the first", func(s *corev1.PodSpec) {
			s.Containers[0].Ports = []corev1.ContainerPort{port("", 8080, "")}
			s.InitContainers = []corev1.Container{
				{Name: "i0", Image: "busybox", Ports: []corev1.ContainerPort{port("", 8080, "")}},
				{Name: "i1", Image: "busybox", Ports: []corev1.ContainerPort{port("", 8080, ""), port("", 8080, "")}},
			}
		}, []string{duplicate + " spec.initContainers[0].ports[1].hostPort"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newPod("p")
			tc.mutate(&p.Spec)
			defaultPod(p)
			errs := r.Strategy.Validate(context.Background(), p)
			wantErrors(t, errs, tc.want...)
			for _, d := range tc.details {
				wantError(t, errs, d)
			}
		})
	}
}
