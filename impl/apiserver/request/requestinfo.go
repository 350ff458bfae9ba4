// Package request parses an API request's URL into the attributes the
// filters and handlers act on (verb, group, version, resource, namespace,
// name, subresource) and carries them, the authenticated user and the
// request's deadline in one context node per request. The deadline needs
// no runtime timer per request: a sweeper closes the Done channels that
// are waited on (deadline.go).
package request

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
)

// Info describes one request, as kube-apiserver's RequestInfo does.
type Info struct {
	// IsResourceRequest is false for non-resource paths (/healthz, /api).
	IsResourceRequest bool
	// Path is the URL path.
	Path string
	// Verb is the Kubernetes verb: get, list, watch, create, update, patch,
	// delete, deletecollection; for non-resource requests the lower-case
	// HTTP method.
	Verb string

	APIPrefix   string // "api" or "apis"
	APIGroup    string
	APIVersion  string
	Namespace   string
	Resource    string
	Subresource string
	Name        string
	// Parts are the path segments after the version (and namespace).
	Parts []string
	// UnderNamespace reports that the resource is addressed under
	// /namespaces/<ns>/ (its Parts follow the namespace's segments). A
	// namespace's own path (/namespaces/<name>[/status|/finalize]) has
	// its name as Namespace too, as in kube-apiserver, but is not under
	// one: only this tells /namespaces/a apart from
	// /namespaces/a/namespaces/a, a path no route serves.
	UnderNamespace bool
	// SelectedName is the name a list's or watch's field selector
	// requires (metadata.name=<name>), when its list options decode and
	// the name could be a path segment: kube-apiserver's request-info
	// parser makes it the request's name, which its authorizers decide on
	// and its refusal names (Named). Handlers read Name, the path's.
	SelectedName string
	// FieldSelector and LabelSelector are the raw selectors of a list,
	// watch or deletecollection (authorizers such as the Node authorizer
	// allow some lists only with a given field selector).
	FieldSelector, LabelSelector string
	// Selectors are the selectors of an access review given as
	// requirements (nil otherwise).
	Selectors *SelectorRequirements
	// methodVerb is the verb of the HTTP method alone (get, create,
	// update, patch, delete; watch on a /watch/ path), before a request
	// without a name becomes a list, watch or deletecollection
	// (RouteVerb).
	methodVerb string
}

// SelectorRequirements are the field and label selector requirements a
// SubjectAccessReview gives (spec.resourceAttributes.fieldSelector and
// labelSelector requirements), in their order, as kube-apiserver passes
// them to its authorizers; Info's FieldSelector and LabelSelector hold
// their text for authorizers that read it.
type SelectorRequirements struct {
	Fields fields.Requirements
	Labels labels.Requirements
}

// Parse builds the Info of r. It never fails: paths it does not recognise
// are non-resource requests.
func Parse(r *http.Request) *Info {
	info := new(Info)
	parseInto(info, r, nil)
	return info
}

// parseInto is Parse filling info, with the path's segments in segBuf's
// array when they fit.
func parseInto(info *Info, r *http.Request, segBuf []string) {
	*info = Info{Path: r.URL.Path, Verb: lowerMethod(r.Method)}
	segs := splitPath(r.URL.Path, segBuf)
	if len(segs) < 3 || (segs[0] != "api" && segs[0] != "apis") {
		return
	}
	info.APIPrefix = segs[0]
	rest := segs[1:]
	if info.APIPrefix == "apis" {
		if len(rest) < 3 {
			return
		}
		info.APIGroup = rest[0]
		rest = rest[1:]
	}
	info.APIVersion = rest[0]
	rest = rest[1:]
	if len(rest) == 0 {
		return
	}
	info.IsResourceRequest = true

	isWatchPath := false
	if rest[0] == "watch" {
		isWatchPath = true
		rest = rest[1:]
		if len(rest) == 0 {
			info.IsResourceRequest = false
			return
		}
	}

	switch r.Method {
	case http.MethodPost:
		info.Verb = "create"
	case http.MethodGet, http.MethodHead:
		info.Verb = "get"
	case http.MethodPut:
		info.Verb = "update"
	case http.MethodPatch:
		info.Verb = "patch"
	case http.MethodDelete:
		info.Verb = "delete"
	default:
		info.Verb = ""
	}
	info.methodVerb = info.Verb

	// /namespaces/{ns}/{resource}... addresses a namespaced resource;
	// /namespaces/{name}[/status|/finalize] the namespace itself, whose
	// Namespace is then its own name (as in kube-apiserver).
	if rest[0] == "namespaces" && len(rest) > 1 {
		info.Namespace = rest[1]
		if len(rest) > 2 && rest[2] != "status" && rest[2] != "finalize" {
			rest = rest[2:]
			info.UnderNamespace = true
		}
	}
	info.Parts = rest
	info.Resource = rest[0]
	if len(rest) >= 2 {
		info.Name = rest[1]
	}
	if len(rest) >= 3 {
		info.Subresource = rest[2]
	}

	q := Query(r)
	if isWatchPath {
		info.Verb = "watch"
		info.methodVerb = "watch"
	}
	if info.Verb == "get" && info.Name == "" {
		info.Verb = "list"
		if w, ok := q["watch"]; ok && watchValue(w[0]) {
			info.Verb = "watch"
		}
		info.SelectedName = selectedName(q)
	}
	if info.Verb == "delete" && info.Name == "" {
		info.Verb = "deletecollection"
	}
	switch info.Verb {
	case "list", "watch", "deletecollection":
		info.FieldSelector, info.LabelSelector = q.Get("fieldSelector"), q.Get("labelSelector")
	}
}

// RouteVerb is the verb of the route kube-apiserver's router picks for
// the request: Verb, except on a subresource's path whose name segment is
// empty (pods//status). Having no name, the request-info parser makes a
// GET there a list or watch and a DELETE a deletecollection (what the
// request is authorized as), while the router still routes the HTTP
// method to the subresource's get or delete, whose handler then refuses
// the empty name.
func (i *Info) RouteVerb() string {
	if i.Name == "" && i.Subresource != "" && i.methodVerb != "" {
		return i.methodVerb
	}
	return i.Verb
}

// IsLongRunning reports whether the request is a watch or a streaming
// subresource (log, exec, attach, portforward, proxy: upstream's
// long-running set), which the in-flight limit and request timeouts do not
// apply to.
func (i *Info) IsLongRunning() bool {
	if !i.IsResourceRequest {
		return false
	}
	switch i.Subresource {
	case "log", "exec", "attach", "portforward", "proxy":
		return true
	}
	return i.Verb == "watch"
}

// IsReadOnly reports whether the request cannot change state.
func (i *Info) IsReadOnly() bool {
	switch i.Verb {
	case "get", "list", "watch", "head", "options":
		return true
	}
	return false
}

// lowerMethod is strings.ToLower(method) with the standard methods'
// lower-case names as constants, not a new string per request.
func lowerMethod(method string) string {
	switch method {
	case http.MethodGet:
		return "get"
	case http.MethodPost:
		return "post"
	case http.MethodPut:
		return "put"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		return "delete"
	case http.MethodHead:
		return "head"
	case http.MethodOptions:
		return "options"
	}
	return strings.ToLower(method)
}

// Query returns r's query parameters; nil (every lookup empty) when there
// are none, which spares parsing an empty query into a new map on every
// request without parameters.
func Query(r *http.Request) url.Values {
	if r.URL.RawQuery == "" {
		return nil
	}
	return r.URL.Query()
}

// Named is the Info as kube-apiserver's request info has it, for
// authorization: a list or watch that names no object by its path is
// named by its field selector's metadata.name (SelectedName).
func (i *Info) Named() *Info {
	if i == nil || i.Name != "" || i.SelectedName == "" {
		return i
	}
	named := *i
	named.Name = i.SelectedName
	return &named
}

// selectedName is the name the list options in q select by
// metadata.name, as kube-apiserver's request-info parser reads it: none
// when the options do not decode (a limit or timeoutSeconds that is not
// an integer, a label or field selector that does not parse) or when the
// name could not be a path segment (".", "..", or holding "/" or "%").
func selectedName(q url.Values) string {
	sel, ok := q["fieldSelector"]
	if !ok || len(sel) == 0 {
		return ""
	}
	for _, k := range []string{"limit", "timeoutSeconds"} {
		if v, ok := q[k]; ok && len(v) > 0 {
			if _, err := strconv.ParseInt(v[0], 10, 64); err != nil {
				return ""
			}
		}
	}
	if v, ok := q["labelSelector"]; ok && len(v) > 0 {
		if _, err := labels.Parse(v[0]); err != nil {
			return ""
		}
	}
	fs, err := fields.ParseSelector(sel[0])
	if err != nil {
		return ""
	}
	name, ok := fs.RequiresExactMatch("metadata.name")
	if !ok || name == "." || name == ".." || strings.ContainsAny(name, "/%") {
		return ""
	}
	return name
}

// watchValue reads a "watch" parameter as kube-apiserver does (its
// request-info parser and ListOptions' boolean decoding): present and
// neither "0" nor "false" in any case is true, "" and "yes" included.
func watchValue(s string) bool { return s != "0" && !strings.EqualFold(s, "false") }

// splitPath is strings.Split of p without its outer slashes, into buf's
// array when the segments fit.
func splitPath(p string, buf []string) []string {
	p = strings.Trim(p, "/")
	if p == "" {
		return nil
	}
	if strings.Count(p, "/") >= cap(buf) {
		return strings.Split(p, "/")
	}
	segs := buf[:0]
	for {
		i := strings.IndexByte(p, '/')
		if i < 0 {
			return append(segs, p)
		}
		segs = append(segs, p[:i])
		p = p[i+1:]
	}
}

// User is an authenticated user.
type User struct {
	Name   string
	UID    string
	Groups []string
	Extra  map[string][]string
}

// GetName and GetGroups let User satisfy small interfaces elsewhere.
func (u *User) GetName() string { return u.Name }

// GetGroups returns the user's groups.
func (u *User) GetGroups() []string { return u.Groups }

type ctxKey int

const (
	infoKey ctxKey = iota
	userKey
	stateKey
)

// NewContext returns ctx carrying Parse(r), as WithInfo(ctx, Parse(r))
// would, with the Info and the path's segments in the context node itself:
// one allocation per request instead of three.
func NewContext(ctx context.Context, r *http.Request) context.Context {
	c := &stateCtx{Context: ctx}
	parseInto(&c.parsed, r, c.segs[:])
	c.info = &c.parsed
	return c
}

// WithInfo returns ctx carrying info. The request's user can later be
// recorded in the same context node (SetUser), so the filter chain adds one
// node per request for both instead of one each.
func WithInfo(ctx context.Context, info *Info) context.Context {
	return &stateCtx{Context: ctx, info: info}
}

// maxPathSegments are as many path segments as a namespaced subresource's
// path has (/apis/{group}/{version}/namespaces/{ns}/{resource}/{name}/{sub}).
const maxPathSegments = 8

// stateCtx is the context node of WithInfo: the request's Info and, once
// authenticated, its user. It answers their keys as the context.WithValue
// nodes it stands for would at its place in the chain.
type stateCtx struct {
	context.Context
	info *Info
	user *User // set by SetUser; nil: look further up
	// parsed and segs hold the Info NewContext parsed and its path
	// segments.
	parsed Info
	segs   [maxPathSegments]string
	// dl is the request's deadline when timed (set by WithTimeout), else
	// the node has the parent's deadline and cancellation.
	dl    deadline
	timed bool
	// valKey and val are the one value SetValue kept here (valKey nil:
	// none).
	valKey, val any
	// warnings collects the warnings added while no other collector is in
	// place (the authenticators'; see AuthenticationWarnings), without an
	// allocation of its own.
	warnings Warnings
	// excluded is the request's latency left out of the SLI latency
	// (ExcludedLatencyFrom).
	excluded ExcludedLatency
}

func (c *stateCtx) Value(key any) any {
	switch key {
	case infoKey:
		return c.info
	case userKey:
		if c.user != nil {
			return c.user
		}
	case stateKey:
		return c
	}
	if c.valKey != nil && key == c.valKey {
		return c.val
	}
	if _, ok := key.(warningsKey); ok {
		return &c.warnings
	}
	return c.Context.Value(key)
}

// SetUser records u as the authenticated user of the request of ctx and
// returns the context to continue with: ctx itself when the user could be
// recorded in the node WithInfo added (nothing nearer carries a user and
// none was recorded yet), else WithUser(ctx, u). Either way UserFrom of the
// result is u. Only the request chain's authentication calls it, before
// anything derived from ctx could be shared.
func SetUser(ctx context.Context, u *User) context.Context {
	if s, ok := ctx.Value(stateKey).(*stateCtx); ok && s.user == nil && ctx.Value(userKey) == nil {
		s.user = u
		return ctx
	}
	return WithUser(ctx, u)
}

// SetValue is context.WithValue(ctx, key, val) for the request chain: when
// ctx is the node WithInfo added and no value was kept there yet, val is
// kept in the node and ctx itself is returned, so that the request need
// not be copied to carry a new context. Either way Value(key) of the result
// is val, and every other key's value is ctx's. key must be comparable and
// not nil, as for context.WithValue. Only the request chain calls it (the
// endpoint's warnings collector), before anything derived from ctx could
// be shared.
func SetValue(ctx context.Context, key, val any) context.Context {
	if s, ok := ctx.(*stateCtx); ok && s.valKey == nil && key != nil {
		s.valKey, s.val = key, val
		return ctx
	}
	return context.WithValue(ctx, key, val)
}

// WithTimeout is context.WithTimeout(ctx, d) for the request chain: when
// ctx is the node WithInfo added, the deadline is kept in that node and ctx
// itself is returned, so that the request need not be copied to carry a new
// context, and without context.WithTimeout's runtime timer and registration
// in the parent's children: the node's Done channel is closed by a sweeper
// at most SweepInterval after the deadline passes or the parent ends (Err
// sees either at once). Else, or when the parent's deadline is earlier, a
// new context from context.WithTimeout. Either way the result's deadline,
// values and errors are what context.WithTimeout would give. Only the
// request chain's timeout filter calls it, before anything derived from ctx
// could be shared.
func WithTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	s, ok := ctx.(*stateCtx)
	if !ok || s.timed {
		return context.WithTimeout(ctx, d)
	}
	at := time.Now().Add(d)
	if parent, ok := s.Context.Deadline(); ok && parent.Before(at) {
		return context.WithTimeout(ctx, d)
	}
	s.dl.at, s.timed = at, true
	return s, s.cancel
}

// InfoFrom returns the Info stored in ctx, or nil.
func InfoFrom(ctx context.Context) *Info {
	i, _ := ctx.Value(infoKey).(*Info)
	return i
}

// WithUser returns ctx carrying u.
func WithUser(ctx context.Context, u *User) context.Context {
	return context.WithValue(ctx, userKey, u)
}

// UserFrom returns the authenticated user stored in ctx, or nil.
func UserFrom(ctx context.Context) *User {
	u, _ := ctx.Value(userKey).(*User)
	return u
}
