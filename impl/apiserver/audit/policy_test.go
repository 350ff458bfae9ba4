package audit

import (
	"strings"
	"testing"

	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

const examplePolicy = `
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: None
    users: ["system:kube-proxy"]
    verbs: ["watch"]
  - level: None
    nonResourceURLs: ["/healthz*", "/version"]
  - level: Metadata
    resources:
      - group: ""
        resources: ["secrets", "configmaps"]
  - level: RequestResponse
    userGroups: ["auditors"]
  - level: Request
    resources:
      - group: ""
        resources: ["pods/status", "*/scale"]
      - group: "apps"
        resources: ["deployments/*"]
    namespaces: ["prod", ""]
    omitStages: ["ResponseComplete"]
  - level: Request
    resources:
      - group: ""
        resources: ["configmaps", "nodes"]
        resourceNames: ["special"]
  - level: Metadata
`

func TestEvaluate(t *testing.T) {
	p, err := ParsePolicy([]byte(examplePolicy))
	if err != nil {
		t.Fatal(err)
	}
	alice := &request.User{Name: "alice", Groups: []string{"system:authenticated"}}
	auditor := &request.User{Name: "eve", Groups: []string{"auditors"}}
	proxy := &request.User{Name: "system:kube-proxy"}
	res := func(verb, group, resource, sub, ns, name string) *request.Info {
		return &request.Info{IsResourceRequest: true, Verb: verb, APIGroup: group, Resource: resource, Subresource: sub, Namespace: ns, Name: name}
	}
	cases := []struct {
		name  string
		user  *request.User
		info  *request.Info
		level Level
		omit  []Stage
	}{
		{"proxy watch", proxy, res("watch", "", "endpoints", "", "", ""), LevelNone, []Stage{StageRequestReceived}},
		{"proxy get falls through", proxy, res("get", "", "endpoints", "", "ns", "e"), LevelMetadata, []Stage{StageRequestReceived}},
		{"health", alice, &request.Info{Verb: "get", Path: "/healthz/etcd"}, LevelNone, nil},
		{"version", alice, &request.Info{Verb: "get", Path: "/version"}, LevelNone, nil},
		{"secrets only metadata, even for auditors", auditor, res("get", "", "secrets", "", "ns", "s"), LevelMetadata, nil},
		{"auditors everything else", auditor, res("get", "", "pods", "", "ns", "p"), LevelRequestResponse, nil},
		{"pods/status in prod", alice, res("update", "", "pods", "status", "prod", "p"), LevelRequest, []Stage{StageRequestReceived, StageResponseComplete}},
		{"pods/status elsewhere", alice, res("update", "", "pods", "status", "dev", "p"), LevelMetadata, nil},
		{"*/scale", alice, res("update", "", "replicationcontrollers", "scale", "prod", "r"), LevelRequest, nil},
		{"deployments/*", alice, res("patch", "apps", "deployments", "status", "prod", "d"), LevelRequest, nil},
		{"deployments/* also matches deployments itself (as upstream)", alice, res("patch", "apps", "deployments", "", "prod", "d"), LevelRequest, nil},
		{"deployments/* in another group", alice, res("patch", "extensions", "deployments", "status", "prod", "d"), LevelMetadata, nil},
		{"cluster-scoped matches namespace \"\"", alice, res("update", "", "nodes", "scale", "", "n"), LevelRequest, nil},
		{"resourceNames", alice, res("get", "", "nodes", "", "", "special"), LevelRequest, nil},
		{"resourceNames other name", alice, res("get", "", "nodes", "", "", "plain"), LevelMetadata, nil},
		{"catch-all", alice, &request.Info{Verb: "get", Path: "/metrics"}, LevelMetadata, nil},
		{"anonymous catch-all", nil, &request.Info{Verb: "get", Path: "/api"}, LevelMetadata, nil},
	}
	for _, c := range cases {
		d := p.Evaluate(c.user, c.info)
		if d.Level != c.level {
			t.Errorf("%s: level %s, want %s", c.name, d.Level, c.level)
		}
		if c.omit != nil && strings.Join(stageNames(d.OmitStages), ",") != strings.Join(stageNames(c.omit), ",") {
			t.Errorf("%s: omitStages %v, want %v", c.name, d.OmitStages, c.omit)
		}
	}
	if d := (&Policy{Rules: []PolicyRule{{Level: LevelMetadata, Users: []string{"bob"}}}}).Evaluate(alice, res("get", "", "pods", "", "", "")); d.Level != LevelNone {
		t.Errorf("no rule matching gives %s, want None", d.Level)
	}
}

func stageNames(s []Stage) []string {
	out := make([]string, len(s))
	for i := range s {
		out[i] = string(s[i])
	}
	return out
}

func TestParsePolicyRejectsInvalid(t *testing.T) {
	head := "apiVersion: audit.k8s.io/v1\nkind: Policy\n"
	cases := map[string]string{
		"wrong kind":          "apiVersion: audit.k8s.io/v1\nkind: Event\nrules: [{level: None}]\n",
		"wrong version":       "apiVersion: audit.k8s.io/v1beta1\nkind: Policy\nrules: [{level: None}]\n",
		"no rules":            head,
		"bad level":           head + "rules: [{level: Everything}]\n",
		"bad stage":           head + "omitStages: [Sometimes]\nrules: [{level: None}]\n",
		"bad rule stage":      head + "rules: [{level: None, omitStages: [Later]}]\n",
		"urls and resources":  head + "rules: [{level: None, nonResourceURLs: [/x], resources: [{group: \"\"}]}]\n",
		"url without slash":   head + "rules: [{level: None, nonResourceURLs: [healthz]}]\n",
		"wildcard in middle":  head + "rules: [{level: None, nonResourceURLs: [/a*/b]}]\n",
		"names without res":   head + "rules: [{level: None, resources: [{group: \"\", resourceNames: [x]}]}]\n",
		"not yaml":            "{{{",
		"rules is not a list": head + "rules: 3\n",
	}
	for name, text := range cases {
		if _, err := ParsePolicy([]byte(text)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
