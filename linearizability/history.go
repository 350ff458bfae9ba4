package linearizability

import (
	"encoding/json"
	"fmt"
	"os"
)

// Kind names a client operation.
type Kind string

// The operations a recorder issues.
const (
	Create Kind = "create"
	Get    Kind = "get"
	List   Kind = "list"
	Update Kind = "update"
	Patch  Kind = "patch"
	Delete Kind = "delete"
)

// Outcome classifies how an operation ended.
type Outcome string

// Outcomes. Ambiguous means the client cannot tell whether the operation
// took effect (timeout, connection reset, 5xx); Failed is a definite
// failure that changed nothing (e.g. 429, or a 4xx the model does not
// cover); the rest are the API server's answers.
const (
	OK            Outcome = "ok"
	AlreadyExists Outcome = "alreadyExists"
	Conflict      Outcome = "conflict"
	NotFound      Outcome = "notFound"
	Expired       Outcome = "expired"
	Ambiguous     Outcome = "ambiguous"
	Failed        Outcome = "failed"
)

// Object is one ConfigMap version as the checker sees it: its name, the
// value of its one data key, its group label and its resourceVersion.
type Object struct {
	Key   string `json:"key"`
	Value string `json:"value"`
	Group string `json:"group,omitempty"`
	RV    int64  `json:"rv"`
}

// Op is one recorded client operation: plain data, serializable to JSON.
// Call and Return are nanoseconds since the history started.
type Op struct {
	ID     int   `json:"id"`
	Client int   `json:"client"`
	Call   int64 `json:"call"`
	Return int64 `json:"return"`
	Kind   Kind  `json:"kind"`
	// Key is the object name (empty for lists).
	Key string `json:"key,omitempty"`
	// Read parameters: resourceVersion ("" = most recent, "0" = any, or a
	// revision), resourceVersionMatch and the page size of lists.
	ResourceVersion string `json:"resourceVersion,omitempty"`
	Match           string `json:"resourceVersionMatch,omitempty"`
	Limit           int64  `json:"limit,omitempty"`
	// Write parameters: the value and group label written, and the
	// resourceVersion precondition of updates and deletes (0 = none).
	Value        string `json:"value,omitempty"`
	Group        string `json:"group,omitempty"`
	Precondition int64  `json:"precondition,omitempty"`

	Outcome Outcome `json:"outcome"`
	// Object is the object returned by a successful create, get, update or
	// patch (for a create, update or patch its RV is the write's revision).
	Object *Object `json:"object,omitempty"`
	// ListRV and Items are the result of a list (all pages merged); Pages
	// counts the pages.
	ListRV int64    `json:"listRV,omitempty"`
	Items  []Object `json:"items,omitempty"`
	Pages  int      `json:"pages,omitempty"`
	// PageRVs are the resourceVersions of every page of a list.
	PageRVs []int64 `json:"pageRVs,omitempty"`
	Error   string  `json:"error,omitempty"`
}

func (o *Op) isWrite() bool {
	switch o.Kind {
	case Create, Update, Patch, Delete:
		return true
	}
	return false
}

// EventType is a watch event type as Kubernetes names it.
type EventType string

// Watch event types.
const (
	Added    EventType = "ADDED"
	Modified EventType = "MODIFIED"
	Deleted  EventType = "DELETED"
	Bookmark EventType = "BOOKMARK"
	Error    EventType = "ERROR"
)

// WatchEvent is one event of a recorded watch stream.
type WatchEvent struct {
	Time int64     `json:"time"`
	Type EventType `json:"type"`
	// Object is the event's object (for a bookmark only RV is set).
	Object Object `json:"object"`
	// InitialEventsEnd marks the bookmark that ends sendInitialEvents.
	InitialEventsEnd bool `json:"initialEventsEnd,omitempty"`
}

// Watch is one recorded watch stream, from the request to its end.
type Watch struct {
	ID int `json:"id"`
	// Resume is the ID of the stream this one resumes (-1: none).
	Resume          int    `json:"resume"`
	Call            int64  `json:"call"`
	End             int64  `json:"end"`
	ResourceVersion string `json:"resourceVersion"`
	Selector        string `json:"selector,omitempty"`
	// Group is the group label the selector requires ("" = every group).
	Group             string `json:"group,omitempty"`
	SendInitialEvents bool   `json:"sendInitialEvents,omitempty"`
	AllowBookmarks    bool   `json:"allowBookmarks,omitempty"`
	// Outcome is OK for a stream that ran (and ended), Expired for 410
	// Gone, Failed for any other error.
	Outcome Outcome      `json:"outcome"`
	Error   string       `json:"error,omitempty"`
	Events  []WatchEvent `json:"events"`
}

// Compaction is a compaction the scenario made: everything below Revision
// may be gone after Call and is gone after Return.
type Compaction struct {
	Call     int64 `json:"call"`
	Return   int64 `json:"return"`
	Revision int64 `json:"revision"`
}

// History is everything one scenario recorded.
type History struct {
	Scenario    string       `json:"scenario"`
	Clients     int          `json:"clients"`
	Keys        []string     `json:"keys"`
	Duration    int64        `json:"duration"`
	Ops         []Op         `json:"operations"`
	Watches     []Watch      `json:"watches"`
	Compactions []Compaction `json:"compactions,omitempty"`
	// ExpiredExact says that the server answers 410 exactly when the
	// requested revision was compacted (true for an API server reading
	// watches and exact lists straight from etcd; a watch cache may expire
	// revisions it no longer holds).
	ExpiredExact bool `json:"expiredExact,omitempty"`
}

// WriteJSON writes h to path.
func (h *History) WriteJSON(path string) error {
	b, err := json.MarshalIndent(h, "", " ")
	if err != nil {
		return fmt.Errorf("encoding history: %w", err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("writing history: %w", err)
	}
	return nil
}

// ReadHistory reads a history written by WriteJSON.
func ReadHistory(path string) (*History, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading history: %w", err)
	}
	var h History
	if err := json.Unmarshal(b, &h); err != nil {
		return nil, fmt.Errorf("decoding history %s: %w", path, err)
	}
	return &h, nil
}
