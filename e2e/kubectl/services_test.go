package kubectl

import (
	"regexp"
	"strings"
	"testing"
)

// TestClusterInfo: `kubectl cluster-info` finds the control plane (it
// lists services in kube-system) and exits 0.
func TestClusterInfo(t *testing.T) {
	t.Parallel()
	out := run(t, "cluster-info")
	if !regexp.MustCompile(`Kubernetes control plane.* is running at .*https://`).MatchString(out) {
		t.Errorf("cluster-info: %q", out)
	}
	// The kubernetes service fronts the API server at the range's first
	// address, and its endpoints are served (empty only on a host with
	// loopback addresses alone).
	if got := jsonpath(t, "{.spec.clusterIP} {.spec.ports[0].port} {.spec.ports[0].name}", "get", "svc", "kubernetes", "-n", "default"); got != "10.96.0.1 443 https" {
		t.Errorf("kubernetes service: %q", got)
	}
	run(t, "get", "endpoints", "kubernetes", "-n", "default")
}

// TestServicesWithKubectl: create service clusterip/nodeport, expose a
// deployment, and the columns kubectl shows for them.
func TestServicesWithKubectl(t *testing.T) {
	t.Parallel()
	ns := createNamespace(t, "svc")
	if out := run(t, "create", "service", "clusterip", "web", "--tcp=5678:8080", "-n", ns); strings.TrimSpace(out) != "service/web created" {
		t.Errorf("create service clusterip: %q", out)
	}
	ip := jsonpath(t, "{.spec.clusterIP}", "get", "svc", "web", "-n", ns)
	if !regexp.MustCompile(`^10\.(9[6-9]|10[0-9]|11[01])\.\d+\.\d+$`).MatchString(ip) {
		t.Errorf("clusterIP %q is not in 10.96.0.0/12", ip)
	}
	if got := jsonpath(t, "{.spec.selector.app} {.spec.ports[0].targetPort} {.spec.type} {.spec.ipFamilies[0]} {.spec.ipFamilyPolicy}",
		"get", "svc", "web", "-n", ns); got != "web 8080 ClusterIP IPv4 SingleStack" {
		t.Errorf("service web: %q", got)
	}
	out := run(t, "get", "svc", "-n", ns)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	header := regexp.MustCompile(`\s{2,}`).Split(strings.TrimSpace(lines[0]), -1)
	if strings.Join(header, "|") != "NAME|TYPE|CLUSTER-IP|EXTERNAL-IP|PORT(S)|AGE" {
		t.Errorf("get svc header: %q", lines[0])
	}
	if !regexp.MustCompile(`^web\s+ClusterIP\s+` + regexp.QuoteMeta(ip) + `\s+<none>\s+5678/TCP\s+\S+$`).MatchString(lines[1]) {
		t.Errorf("get svc row: %q", lines[1])
	}
	if wide := run(t, "get", "svc", "web", "-o", "wide", "-n", ns); !regexp.MustCompile(`\sSELECTOR\n.*\sapp=web\n?$`).MatchString(wide) {
		t.Errorf("get svc -o wide: %q", wide)
	}

	desc := run(t, "describe", "svc", "web", "-n", ns)
	for _, want := range []string{"Name:", "web", "Type:", "ClusterIP", "IP:", ip, "Port:", "5678/TCP", "TargetPort:", "8080/TCP", "Selector:", "app=web"} {
		if !strings.Contains(desc, want) {
			t.Errorf("describe svc lacks %q:\n%s", want, desc)
		}
	}

	// A requested address that is taken is refused as kube-apiserver does.
	runFail(t, "provided IP is already allocated", "create", "service", "clusterip", "again", "--tcp=80", "--clusterip="+ip, "-n", ns)

	run(t, "create", "service", "nodeport", "np", "--tcp=80:8080", "--node-port=30080", "-n", ns)
	if got := jsonpath(t, "{.spec.ports[0].nodePort} {.spec.externalTrafficPolicy}", "get", "svc", "np", "-n", ns); got != "30080 Cluster" {
		t.Errorf("nodeport service: %q", got)
	}
	if row := run(t, "get", "svc", "np", "--no-headers", "-n", ns); !regexp.MustCompile(`^np\s+NodePort\s+\S+\s+<none>\s+80:30080/TCP\s`).MatchString(row) {
		t.Errorf("nodeport row: %q", row)
	}
	runFail(t, "provided port is already allocated", "create", "service", "nodeport", "np2", "--tcp=80:8080", "--node-port=30080", "-n", ns)
	run(t, "create", "service", "externalname", "ext", "--external-name=example.com", "-n", ns)
	if row := run(t, "get", "svc", "ext", "--no-headers", "-n", ns); !regexp.MustCompile(`^ext\s+ExternalName\s+<none>\s+example.com\s+<none>\s`).MatchString(row) {
		t.Errorf("externalname row: %q", row)
	}
	run(t, "create", "service", "clusterip", "headless", "--clusterip=None", "-n", ns)
	if got := jsonpath(t, "{.spec.clusterIP}", "get", "svc", "headless", "-n", ns); got != "None" {
		t.Errorf("headless clusterIP %q", got)
	}

	// A server-side dry run shows the address and node port a create would
	// take, and takes none.
	dryIP := run(t, "create", "service", "clusterip", "dry", "--tcp=80", "--dry-run=server", "-o", "jsonpath={.spec.clusterIP}", "-n", ns)
	if !regexp.MustCompile(`^10\.(9[6-9]|10[0-9]|11[01])\.\d+\.\d+$`).MatchString(dryIP) || dryIP == ip {
		t.Errorf("dry-run clusterIP %q: want a free address of 10.96.0.0/12", dryIP)
	}
	dryPort := run(t, "create", "service", "nodeport", "drynp", "--tcp=80:8080", "--dry-run=server", "-o", "jsonpath={.spec.ports[0].nodePort}", "-n", ns)
	if !regexp.MustCompile(`^3[0-2]\d{3}$`).MatchString(dryPort) || dryPort == "30080" {
		t.Errorf("dry-run nodePort %q: want a free port of 30000-32767", dryPort)
	}
	runFail(t, "provided IP is already allocated", "create", "service", "clusterip", "dry", "--tcp=80", "--clusterip="+ip, "--dry-run=server", "-n", ns)
	runFail(t, "NotFound", "get", "svc", "dry", "-n", ns)
	run(t, "create", "service", "clusterip", "dry", "--tcp=80", "--clusterip="+dryIP, "-n", ns)

	// kubectl expose takes the deployment's selector and port.
	run(t, "create", "deployment", "app", "--image=nginx", "--port=80", "-n", ns)
	if out := run(t, "expose", "deployment", "app", "--port=8000", "--target-port=80", "-n", ns); strings.TrimSpace(out) != "service/app exposed" {
		t.Errorf("expose: %q", out)
	}
	if got := jsonpath(t, "{.spec.selector.app} {.spec.ports[0].port} {.spec.ports[0].targetPort}", "get", "svc", "app", "-n", ns); got != "app 8000 80" {
		t.Errorf("exposed service: %q", got)
	}

	// Deleting gives the node port back.
	run(t, "delete", "svc", "np", "-n", ns)
	run(t, "create", "service", "nodeport", "np3", "--tcp=80:8080", "--node-port=30080", "-n", ns)
}
