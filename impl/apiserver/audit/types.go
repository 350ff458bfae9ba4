// Package audit is the API server's audit log: audit.k8s.io/v1 Events,
// one JSON object per line, written for each request at the level an
// audit.k8s.io/v1 Policy gives it (None, Metadata, Request,
// RequestResponse), at the stages RequestReceived, ResponseStarted (long-
// running requests: watches, logs, exec), ResponseComplete and Panic,
// minus the policy's omitStages.
//
// The types mirror kube-apiserver's audit.k8s.io/v1 JSON field by field;
// k8s.io/apiserver is not imported.
//
// Constructors (the API server wires them from --audit-policy-file,
// --audit-log-* and --audit-webhook-*):
//
//	policy, err := audit.LoadPolicy(path)        // or audit.ParsePolicy(data)
//	backend, err := audit.NewBackends(logOpts, webhookOpts, metrics) // Close it on shutdown
//	cfg := audit.Config{Policy: policy, Backend: backend, Metrics: metrics}
//	h = audit.WithAudit(h, cfg)
//	h = audit.WithAuditInit(h, cfg)              // outermost: Audit-Id on every answer
//
// WithFailedAuthenticationAudit(unauthorizedHandler, cfg) records the
// requests authentication rejects (stage ResponseStarted, 401).
//
// Backends, as kube-apiserver's: the log (WriterBackend: JSON or legacy
// lines to standard output or a RotatingFile) and the webhook
// (WebhookBackend: audit.k8s.io/v1 EventLists POSTed to the service a
// kubeconfig names, retried with backoff), each in a mode — blocking,
// blocking-strict (a failure at RequestReceived fails the request) or
// batch (Buffered: queued, sent in throttled batches, flushed on Close) —
// and fanned out by Union.
//
// WithAudit must run after authentication (it reads request.UserFrom and
// request.InfoFrom). Later filters may enrich the event through the
// request context: SetImpersonatedUser (impersonation), AddAnnotation
// (e.g. authorization.k8s.io/decision and authorization.k8s.io/reason) and
// LogRequestObject (the create and update handlers, once the body is
// decoded: objectRef's namespace, name, uid and resourceVersion the path
// left empty, and the requestObject, that object encoded again) and
// LogRequestOptions (the delete handlers, once the body
// decoded to DeleteOptions, encoded again). responseStatus is the HTTP code with the fields of a Status
// answer, success ones too, as kube-apiserver's LogResponseObject.
package audit

import (
	"encoding/json"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// APIVersion and kinds of the audit.k8s.io/v1 objects.
const (
	APIVersion = "audit.k8s.io/v1"
	EventKind  = "Event"
	PolicyKind = "Policy"
)

// Level is how much of a request is recorded.
type Level string

// Levels, from least to most.
const (
	LevelNone            Level = "None"
	LevelMetadata        Level = "Metadata"
	LevelRequest         Level = "Request"
	LevelRequestResponse Level = "RequestResponse"
)

var levelOrder = map[Level]int{LevelNone: 0, LevelMetadata: 1, LevelRequest: 2, LevelRequestResponse: 3}

// Less reports whether l records less than o.
func (l Level) Less(o Level) bool { return levelOrder[l] < levelOrder[o] }

// Valid reports whether l is one of the four levels.
func (l Level) Valid() bool { _, ok := levelOrder[l]; return ok }

// Stage is the point of a request's life an event describes.
type Stage string

// Stages.
const (
	StageRequestReceived  Stage = "RequestReceived"
	StageResponseStarted  Stage = "ResponseStarted"
	StageResponseComplete Stage = "ResponseComplete"
	StagePanic            Stage = "Panic"
)

func (s Stage) valid() bool {
	switch s {
	case StageRequestReceived, StageResponseStarted, StageResponseComplete, StagePanic:
		return true
	}
	return false
}

// Event is an audit.k8s.io/v1 Event.
type Event struct {
	metav1.TypeMeta `json:",inline"`

	Level      Level     `json:"level"`
	AuditID    types.UID `json:"auditID"`
	Stage      Stage     `json:"stage"`
	RequestURI string    `json:"requestURI"`
	Verb       string    `json:"verb"`

	User             authnv1.UserInfo  `json:"user"`
	ImpersonatedUser *authnv1.UserInfo `json:"impersonatedUser,omitempty"`
	SourceIPs        []string          `json:"sourceIPs,omitempty"`
	UserAgent        string            `json:"userAgent,omitempty"`
	ObjectRef        *ObjectReference  `json:"objectRef,omitempty"`
	ResponseStatus   *metav1.Status    `json:"responseStatus,omitempty"`

	// RequestObject and ResponseObject are the JSON bodies, recorded at
	// the Request and RequestResponse levels (the request's after
	// RequestReceived, and for creates and updates once decoded; see
	// bodyRecorded).
	RequestObject  json.RawMessage `json:"requestObject,omitempty"`
	ResponseObject json.RawMessage `json:"responseObject,omitempty"`

	RequestReceivedTimestamp metav1.MicroTime `json:"requestReceivedTimestamp"`
	StageTimestamp           metav1.MicroTime `json:"stageTimestamp"`

	Annotations map[string]string `json:"annotations,omitempty"`
}

// ObjectReference names the object a request is about.
type ObjectReference struct {
	Resource        string    `json:"resource,omitempty"`
	Namespace       string    `json:"namespace,omitempty"`
	Name            string    `json:"name,omitempty"`
	UID             types.UID `json:"uid,omitempty"`
	APIGroup        string    `json:"apiGroup,omitempty"`
	APIVersion      string    `json:"apiVersion,omitempty"`
	ResourceVersion string    `json:"resourceVersion,omitempty"`
	Subresource     string    `json:"subresource,omitempty"`
}

// Policy is an audit.k8s.io/v1 Policy: the first rule that matches a
// request gives its level; no match is level None.
type Policy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Rules []PolicyRule `json:"rules"`
	// OmitStages are never recorded, for any rule.
	OmitStages []Stage `json:"omitStages,omitempty"`
	// OmitManagedFields drops metadata.managedFields from recorded bodies.
	OmitManagedFields bool `json:"omitManagedFields,omitempty"`
}

// PolicyRule maps requests to a level. Empty lists match everything.
type PolicyRule struct {
	Level      Level    `json:"level"`
	Users      []string `json:"users,omitempty"`
	UserGroups []string `json:"userGroups,omitempty"`
	Verbs      []string `json:"verbs,omitempty"`

	// Resources and Namespaces make the rule match resource requests only;
	// NonResourceURLs non-resource requests only.
	Resources       []GroupResources `json:"resources,omitempty"`
	Namespaces      []string         `json:"namespaces,omitempty"`
	NonResourceURLs []string         `json:"nonResourceURLs,omitempty"`

	OmitStages        []Stage `json:"omitStages,omitempty"`
	OmitManagedFields *bool   `json:"omitManagedFields,omitempty"`
}

// GroupResources selects resources of one API group ("" is core).
type GroupResources struct {
	Group         string   `json:"group,omitempty"`
	Resources     []string `json:"resources,omitempty"`
	ResourceNames []string `json:"resourceNames,omitempty"`
}
