package fuzz

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeproof/kubeproof/impl/apiserver/codec"
	"github.com/kubeproof/kubeproof/impl/apiserver/resource"
	"github.com/kubeproof/kubeproof/impl/registry"
)

// served is every resource the API server serves, in discovery order, and
// the server's codecs; both are built once per test process.
var served = sync.OnceValues(func() ([]*resource.Resource, *codec.Codecs) {
	c, err := codec.New()
	if err != nil {
		panic(fmt.Sprintf("building codecs: %v", err))
	}
	return registry.All(), c
})

// templates are small valid objects of every served kind, keyed by
// resource name, in JSON without apiVersion and kind (added by
// templateJSON). Their namespace is filled in by the caller.
var templates = map[string]string{
	"componentstatuses":               `{"metadata":{"name":"NAME"},"conditions":[{"type":"Healthy","status":"True","message":"ok"}]}`, // never written: bodies for its 405s
	"configmaps":                      `{"metadata":{"name":"NAME","labels":{"app":"fuzz"}},"data":{"k":"v"}}`,
	"events":                          `{"metadata":{"name":"NAME"},"involvedObject":{"kind":"Pod","name":"p","namespace":"NS"},"reason":"Fuzz","message":"m","type":"Normal","source":{"component":"fuzz"}}`,
	"limitranges":                     `{"metadata":{"name":"NAME"},"spec":{"limits":[{"type":"Container","max":{"cpu":"2"},"min":{"cpu":"100m"}}]}}`,
	"namespaces":                      `{"metadata":{"name":"NAME","labels":{"app":"fuzz"}}}`,
	"nodes":                           `{"metadata":{"name":"NAME","labels":{"app":"fuzz"}},"spec":{"podCIDR":"10.1.0.0/24"}}`,
	"pods":                            `{"metadata":{"name":"NAME","labels":{"app":"fuzz"}},"spec":{"containers":[{"name":"c","image":"nginx","resources":{"requests":{"cpu":"100m"}}}]}}`,
	"resourcequotas":                  `{"metadata":{"name":"NAME"},"spec":{"hard":{"pods":"10","requests.cpu":"4"}}}`,
	"secrets":                         `{"metadata":{"name":"NAME"},"type":"Opaque","data":{"k":"dg=="}}`,
	"serviceaccounts":                 `{"metadata":{"name":"NAME"}}`,
	"services":                        `{"metadata":{"name":"NAME","labels":{"app":"fuzz"}},"spec":{"selector":{"app":"fuzz"},"ports":[{"port":80}]}}`,
	"endpoints":                       `{"metadata":{"name":"NAME","labels":{"app":"fuzz"}},"subsets":[{"addresses":[{"ip":"10.1.0.1"}],"ports":[{"port":80}]}]}`,
	"deployments":                     `{"metadata":{"name":"NAME","labels":{"app":"fuzz"}},"spec":{"replicas":1,"selector":{"matchLabels":{"app":"fuzz"}},"template":{"metadata":{"labels":{"app":"fuzz"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}}}`,
	"replicasets":                     `{"metadata":{"name":"NAME","labels":{"app":"fuzz"}},"spec":{"replicas":1,"selector":{"matchLabels":{"app":"fuzz"}},"template":{"metadata":{"labels":{"app":"fuzz"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}}}`,
	"certificatesigningrequests":      `{"metadata":{"name":"NAME"},"spec":{"request":"LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0KTUlISU1IRUNBUUF3RHpFTk1Bc0dBMVVFQXhNRVpuVjZlakJaTUJNR0J5cUdTTTQ5QWdFR0NDcUdTTTQ5QXdFSApBMElBQkpLZ0xvbkhFamwxMVkxVDR5Mnp5WFpIN29rTGV5cGVnUVdaZWxhdXhGUDd1Z1hPbjZXcUs2clI5STh2CnZXVnVBMGJRWkFXdm9XOFg2NjRTaUp2TCtweWdBREFLQmdncWhrak9QUVFEQWdOSEFEQkVBaUJvVzBBVXdJYjYKOXdvamtqTXNTeDR0VDB2SVJ2ejJlRVhiU1k0SnhtL1ZPd0lnWnl1dWIrM0hXK0JpaDVBaWRlRlpWY1k3akJVUQpEUWxSMm9HdmtQZ0ZXWnc9Ci0tLS0tRU5EIENFUlRJRklDQVRFIFJFUVVFU1QtLS0tLQo=","signerName":"example.com/fuzz","usages":["client auth"]}}`,
	"leases":                          `{"metadata":{"name":"NAME"},"spec":{"holderIdentity":"h","leaseDurationSeconds":10}}`,
	"endpointslices":                  `{"metadata":{"name":"NAME","labels":{"kubernetes.io/service-name":"fuzz"}},"addressType":"IPv4","endpoints":[{"addresses":["10.1.0.1"],"conditions":{"ready":true}}],"ports":[{"name":"http","port":80}]}`,
	"clusterrolebindings":             `{"metadata":{"name":"NAME"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"view"},"subjects":[{"kind":"User","apiGroup":"rbac.authorization.k8s.io","name":"alice"}]}`,
	"clusterroles":                    `{"metadata":{"name":"NAME"},"rules":[{"apiGroups":[""],"resources":["pods"],"verbs":["get","list"]}]}`,
	"rolebindings":                    `{"metadata":{"name":"NAME"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"r"},"subjects":[{"kind":"ServiceAccount","name":"default","namespace":"NS"}]}`,
	"roles":                           `{"metadata":{"name":"NAME"},"rules":[{"apiGroups":["apps"],"resources":["deployments"],"verbs":["*"]}]}`,
	"poddisruptionbudgets":            `{"metadata":{"name":"NAME"},"spec":{"minAvailable":1,"selector":{"matchLabels":{"app":"fuzz"}}}}`,
	"priorityclasses":                 `{"metadata":{"name":"NAME"},"value":1000,"description":"fuzz"}`,
	"runtimeclasses":                  `{"metadata":{"name":"NAME"},"handler":"runc","overhead":{"podFixed":{"cpu":"100m"}},"scheduling":{"nodeSelector":{"app":"fuzz"},"tolerations":[{"key":"k","operator":"Exists","effect":"NoSchedule"}]}}`,
	"mutatingwebhookconfigurations":   `{"metadata":{"name":"NAME"},"webhooks":[{"name":"w.fuzz.example.com","clientConfig":{"url":"https://127.0.0.1:1/mutate"},"rules":[{"operations":["CREATE"],"apiGroups":[""],"apiVersions":["v1"],"resources":["configmaps"]}],"sideEffects":"None","admissionReviewVersions":["v1"],"failurePolicy":"Ignore","timeoutSeconds":1}]}`,
	"validatingwebhookconfigurations": `{"metadata":{"name":"NAME"},"webhooks":[{"name":"w.fuzz.example.com","clientConfig":{"url":"https://127.0.0.1:1/validate"},"rules":[{"operations":["CREATE"],"apiGroups":[""],"apiVersions":["v1"],"resources":["configmaps"]}],"sideEffects":"None","admissionReviewVersions":["v1"],"failurePolicy":"Ignore","timeoutSeconds":1}]}`,
	"events.k8s.io/events":            `{"metadata":{"name":"NAME"},"eventTime":"2026-01-01T00:00:00.000000Z","reportingController":"fuzz/c","reportingInstance":"i","action":"Fuzz","reason":"Fuzz","type":"Normal","regarding":{"kind":"Pod","name":"p","namespace":"NS"}}`,
	"flowschemas":                     `{"metadata":{"name":"NAME"},"spec":{"priorityLevelConfiguration":{"name":"global-default"},"matchingPrecedence":5000,"distinguisherMethod":{"type":"ByUser"},"rules":[{"subjects":[{"kind":"User","user":{"name":"fuzz"}}],"resourceRules":[{"verbs":["get"],"apiGroups":[""],"resources":["pods"],"namespaces":["*"]}]}]}}`,
	"prioritylevelconfigurations":     `{"metadata":{"name":"NAME"},"spec":{"type":"Limited","limited":{"nominalConcurrencyShares":5,"limitResponse":{"type":"Queue","queuing":{"queues":16,"handSize":4,"queueLengthLimit":10}}}}}`,
}

// templateVariants are further valid objects of some kinds, for the
// fields their template leaves out (node ports, IP family policies,
// headless and ExternalName services, IPv6 and FQDN slices, flow schemas
// by namespace and non-resource rules, priority levels that reject or
// lend, pods and pod templates with spec.os, hostUsers, dnsConfig,
// security contexts, fileKeyRef and certificate projections): a mutation then replaces a field the kind's newer code reads.
// Variant 0 is the template; variant i > 0 is templateVariants[key][i-1].
var templateVariants = map[string][]string{
	// A Linux pod in a user namespace with every field of session 28's
	// validation set (dnsConfig, pod and container security contexts,
	// fileKeyRef env, projected podCertificate and clusterTrustBundle
	// sources), and a Windows pod with windowsOptions.
	"pods": {
		`{"metadata":{"name":"NAME","labels":{"app":"fuzz"}},"spec":{"os":{"name":"linux"},"hostUsers":false,"dnsPolicy":"None","dnsConfig":{"nameservers":["10.0.0.10"],"searches":["NS.svc.cluster.local"],"options":[{"name":"ndots","value":"2"}]},` +
			`"securityContext":{"runAsNonRoot":true,"runAsUser":1000,"fsGroup":2000,"fsGroupChangePolicy":"OnRootMismatch","supplementalGroups":[3000],"supplementalGroupsPolicy":"Strict","seccompProfile":{"type":"RuntimeDefault"},"appArmorProfile":{"type":"RuntimeDefault"},"sysctls":[{"name":"kernel.shm_rmid_forced","value":"1"}],"seLinuxChangePolicy":"Recursive"},` +
			`"containers":[{"name":"c","image":"nginx","env":[{"name":"FROM_FILE","valueFrom":{"fileKeyRef":{"volumeName":"files","path":"env.txt","key":"KEY","optional":true}}}],` +
			`"securityContext":{"allowPrivilegeEscalation":false,"capabilities":{"drop":["ALL"]},"procMount":"Unmasked","seccompProfile":{"type":"Localhost","localhostProfile":"profiles/audit.json"},"appArmorProfile":{"type":"Localhost","localhostProfile":"k8s-profile"}},` +
			`"volumeMounts":[{"name":"certs","mountPath":"/var/run/certs","readOnly":true}]}],` +
			`"volumes":[{"name":"files","emptyDir":{}},{"name":"certs","projected":{"sources":[{"podCertificate":{"signerName":"example.com/signer","keyType":"ED25519","credentialBundlePath":"cred.pem","maxExpirationSeconds":86400,"userAnnotations":{"example.com/team":"fuzz"}}},` +
			`{"clusterTrustBundle":{"signerName":"example.com/signer","labelSelector":{"matchLabels":{"app":"fuzz"}},"path":"ca.pem","optional":true}},{"clusterTrustBundle":{"name":"example.com:signer:bundle","path":"bundle.pem"}}]}}]}}`,
		`{"metadata":{"name":"NAME"},"spec":{"os":{"name":"windows"},"securityContext":{"windowsOptions":{"runAsUserName":"ContainerUser"}},"containers":[{"name":"c","image":"mcr.microsoft.com/windows/nanoserver:ltsc2022","securityContext":{"windowsOptions":{"gmsaCredentialSpecName":"gmsa","gmsaCredentialSpec":"{}","runAsUserName":"NT AUTHORITY\\NETWORK SERVICE"}}}]}}`,
		// For pods/resize: a Guaranteed pod with resize policies, a
		// sidecar and a plain init container; a Burstable pod with a
		// resource a resize may not change and a BestEffort container;
		// a pod with pod-level resources (which resize refuses).
		`{"metadata":{"name":"NAME","labels":{"app":"fuzz"}},"spec":{"initContainers":[{"name":"init","image":"busybox","resources":{"requests":{"cpu":"100m","memory":"64Mi"},"limits":{"cpu":"100m","memory":"64Mi"}}},` +
			`{"name":"sidecar","image":"envoy","restartPolicy":"Always","resizePolicy":[{"resourceName":"cpu","restartPolicy":"NotRequired"},{"resourceName":"memory","restartPolicy":"RestartContainer"}],"resources":{"requests":{"cpu":"100m","memory":"64Mi"},"limits":{"cpu":"100m","memory":"64Mi"}}}],` +
			`"containers":[{"name":"c","image":"nginx","resizePolicy":[{"resourceName":"cpu","restartPolicy":"NotRequired"},{"resourceName":"memory","restartPolicy":"NotRequired"}],"resources":{"requests":{"cpu":"200m","memory":"128Mi"},"limits":{"cpu":"200m","memory":"128Mi"}}},` +
			`{"name":"d","image":"redis","resources":{"requests":{"cpu":"1","memory":"1Gi"},"limits":{"cpu":"1","memory":"1Gi"}}}]}}`,
		`{"metadata":{"name":"NAME"},"spec":{"containers":[{"name":"c","image":"nginx","resources":{"requests":{"cpu":"100m","memory":"64Mi","ephemeral-storage":"1Gi"},"limits":{"memory":"256Mi","ephemeral-storage":"2Gi"}}},{"name":"e","image":"busybox"}]}}`,
		`{"metadata":{"name":"NAME"},"spec":{"resources":{"requests":{"cpu":"500m","memory":"256Mi"},"limits":{"cpu":"1","memory":"512Mi"}},"containers":[{"name":"c","image":"nginx","resources":{"requests":{"cpu":"100m"}}}]}}`,
		// Running as the service account "seed" (which FuzzHTTP may
		// create): a TokenRequest of that account may be bound to it.
		`{"metadata":{"name":"NAME"},"spec":{"serviceAccountName":"seed","containers":[{"name":"c","image":"nginx"}]}}`,
	},
	"deployments": {
		`{"metadata":{"name":"NAME","labels":{"app":"fuzz"}},"spec":{"replicas":1,"selector":{"matchLabels":{"app":"fuzz"}},"template":{"metadata":{"labels":{"app":"fuzz"}},"spec":{"os":{"name":"linux"},"hostUsers":false,"dnsPolicy":"None","dnsConfig":{"nameservers":["10.0.0.10"],"options":[{"name":"ndots","value":"2"}]},` +
			`"securityContext":{"sysctls":[{"name":"kernel.shm_rmid_forced","value":"1"}],"seccompProfile":{"type":"RuntimeDefault"}},` +
			`"containers":[{"name":"c","image":"nginx","env":[{"name":"FROM_FILE","valueFrom":{"fileKeyRef":{"volumeName":"files","path":"env.txt","key":"KEY"}}}],"securityContext":{"procMount":"Unmasked"}}],` +
			`"volumes":[{"name":"files","emptyDir":{}},{"name":"certs","projected":{"sources":[{"podCertificate":{"signerName":"example.com/signer","keyType":"ECDSAP256","keyPath":"key.pem","certificateChainPath":"chain.pem"}},{"clusterTrustBundle":{"name":"bundle","path":"ca.pem"}}]}}]}}}}`,
	},
	"services": {
		`{"metadata":{"name":"NAME","labels":{"app":"fuzz"}},"spec":{"type":"NodePort","selector":{"app":"fuzz"},"ipFamilyPolicy":"PreferDualStack","ipFamilies":["IPv4"],"ports":[{"name":"http","port":80,"protocol":"TCP","targetPort":8080},{"name":"dns","port":53,"protocol":"UDP"}]}}`,
		`{"metadata":{"name":"NAME"},"spec":{"type":"LoadBalancer","externalTrafficPolicy":"Local","internalTrafficPolicy":"Local","sessionAffinity":"ClientIP","selector":{"app":"fuzz"},"ports":[{"name":"https","port":443,"targetPort":"https","appProtocol":"https"}]}}`,
		`{"metadata":{"name":"NAME"},"spec":{"clusterIP":"None","clusterIPs":["None"],"ipFamilyPolicy":"SingleStack","publishNotReadyAddresses":true,"selector":{"app":"fuzz"},"ports":[{"port":80}]}}`,
		`{"metadata":{"name":"NAME"},"spec":{"type":"ExternalName","externalName":"fuzz.example.com","ports":[{"port":80}]}}`,
	},
	"endpoints": {
		`{"metadata":{"name":"NAME"},"subsets":[{"addresses":[{"ip":"fd00::1","hostname":"a","nodeName":"n","targetRef":{"kind":"Pod","name":"p","namespace":"NS"}}],"notReadyAddresses":[{"ip":"fd00::2"}],"ports":[{"name":"http","port":80,"protocol":"TCP","appProtocol":"http"},{"name":"dns","port":53,"protocol":"UDP"}]}]}`,
	},
	"endpointslices": {
		`{"metadata":{"name":"NAME","labels":{"kubernetes.io/service-name":"fuzz","endpointslice.kubernetes.io/managed-by":"fuzz"}},"addressType":"IPv6","endpoints":[{"addresses":["fd00::1"],"conditions":{"ready":false,"serving":true,"terminating":true},"hostname":"a","nodeName":"n","zone":"z","hints":{"forZones":[{"name":"z"}]},"targetRef":{"kind":"Pod","name":"p","namespace":"NS"}}],"ports":[{"name":"dns","port":53,"protocol":"UDP","appProtocol":"dns"}]}`,
		`{"metadata":{"name":"NAME","labels":{"kubernetes.io/service-name":"fuzz"}},"addressType":"FQDN","endpoints":[{"addresses":["a.fuzz.example.com"]}],"ports":[]}`,
	},
	"flowschemas": {
		`{"metadata":{"name":"NAME"},"spec":{"priorityLevelConfiguration":{"name":"NAME"},"matchingPrecedence":10000,"distinguisherMethod":{"type":"ByNamespace"},"rules":[{"subjects":[{"kind":"ServiceAccount","serviceAccount":{"namespace":"NS","name":"*"}},{"kind":"Group","group":{"name":"system:authenticated"}}],"resourceRules":[{"verbs":["*"],"apiGroups":["*"],"resources":["*"],"clusterScope":true,"namespaces":["NS"]}]}]}}`,
		`{"metadata":{"name":"NAME"},"spec":{"priorityLevelConfiguration":{"name":"global-default"},"matchingPrecedence":2,"rules":[{"subjects":[{"kind":"Group","group":{"name":"system:unauthenticated"}}],"nonResourceRules":[{"verbs":["get"],"nonResourceURLs":["/healthz","/livez/*"]}]}]}}`,
	},
	"prioritylevelconfigurations": {
		`{"metadata":{"name":"NAME"},"spec":{"type":"Limited","limited":{"nominalConcurrencyShares":0,"lendablePercent":100,"borrowingLimitPercent":200,"limitResponse":{"type":"Reject"}}}}`,
		`{"metadata":{"name":"NAME"},"spec":{"type":"Limited","limited":{"nominalConcurrencyShares":1000,"lendablePercent":0,"borrowingLimitPercent":0,"limitResponse":{"type":"Queue","queuing":{"queues":1,"handSize":1,"queueLengthLimit":1}}}}}`,
	},
}

// templateVariant returns variant v (mod their number) of r's templates,
// as templateJSON does its template.
func templateVariant(r *resource.Resource, ns, name string, v int) []byte {
	vs := templateVariants[templateKey(r)]
	if v %= len(vs) + 1; v == 0 {
		return templateJSON(r, ns, name)
	}
	return fillTemplate(r, vs[v-1], ns, name)
}

// TestTemplatesCoverEveryServedResource keeps the templates in step with
// the registry: a served kind without one would panic the HTTP target.
func TestTemplatesCoverEveryServedResource(t *testing.T) {
	rs, _ := served()
	for _, r := range rs {
		if _, ok := templates[templateKey(r)]; !ok {
			t.Errorf("no template for %s", templateKey(r))
		}
	}
}

// templateKey is r's key in templates.
func templateKey(r *resource.Resource) string {
	if r.GroupVersion.Group == "events.k8s.io" {
		return "events.k8s.io/" + r.Name
	}
	return r.Name
}

// templateJSON returns r's template with apiVersion, kind, name and
// namespace filled in.
func templateJSON(r *resource.Resource, ns, name string) []byte {
	t, ok := templates[templateKey(r)]
	if !ok {
		panic("no template for " + templateKey(r))
	}
	return fillTemplate(r, t, ns, name)
}

// fillTemplate adds apiVersion, kind, name and namespace to t.
func fillTemplate(r *resource.Resource, t, ns, name string) []byte {
	head := fmt.Sprintf(`{"apiVersion":%q,"kind":%q,`, r.GroupVersion.String(), r.Kind)
	body := head + t[1:]
	body = strings.ReplaceAll(body, "NAME", name)
	body = strings.ReplaceAll(body, "NS", ns)
	if r.Namespaced {
		body = strings.ReplaceAll(body, `"metadata":{`, fmt.Sprintf(`"metadata":{"namespace":%q,`, ns))
	}
	return []byte(body)
}

// decodeTemplate decodes r's template into a typed object.
func decodeTemplate(t testing.TB, r *resource.Resource, ns, name string) runtime.Object {
	t.Helper()
	_, c := served()
	gvk := r.GroupVersionKind()
	obj, _, err := c.Factory.UniversalDeserializer().Decode(templateJSON(r, ns, name), &gvk, r.New())
	if err != nil {
		t.Fatalf("decoding template of %s: %v", r.Name, err)
	}
	return obj
}

// The templates are what the other targets start from: each must be valid.
func TestTemplatesAreValid(t *testing.T) {
	rs, c := served()
	for _, r := range rs {
		for v := range len(templateVariants[templateKey(r)]) + 1 {
			gvk := r.GroupVersionKind()
			obj, _, err := c.Factory.UniversalDeserializer().Decode(templateVariant(r, "fuzz", "t1", v), &gvk, r.New())
			if err != nil {
				t.Errorf("decoding %s template %d: %v", r.Name, v, err)
				continue
			}
			r.Strategy.Default(obj)
			r.Strategy.PrepareForCreate(context.Background(), obj)
			if errs := r.Strategy.Validate(context.Background(), obj); len(errs) > 0 {
				t.Errorf("%s template %d is invalid: %v", r.Name, v, errs.ToAggregate())
			}
		}
	}
}

// gvkOf is r's kind as a pointer, as Decode wants it.
func gvkOf(r *resource.Resource) *schema.GroupVersionKind {
	gvk := r.GroupVersionKind()
	return &gvk
}

// schemaGV is the group version obj's type is registered in, preferring
// the served one.
func schemaGV(obj runtime.Object, c *codec.Codecs) schema.GroupVersion {
	rs, _ := served()
	for _, r := range rs {
		if fmt.Sprintf("%T", r.New()) == fmt.Sprintf("%T", obj) {
			return r.GroupVersion
		}
	}
	gvks, _, err := c.Scheme.ObjectKinds(obj)
	if err != nil || len(gvks) == 0 {
		return schema.GroupVersion{}
	}
	return gvks[0].GroupVersion()
}
