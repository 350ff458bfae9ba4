package framework

import (
	"errors"
	"strings"
)

// Code is the outcome of running a plugin.
type Code int

// Status codes, as in kube-scheduler.
const (
	// Success means the plugin ran and the pod may proceed.
	Success Code = iota
	// Error is an internal error; the attempt fails and the pod is retried.
	Error
	// Unschedulable means the pod does not fit the node now; preemption may help.
	Unschedulable
	// UnschedulableAndUnresolvable means the pod can never fit the node as
	// it is; preemption does not help.
	UnschedulableAndUnresolvable
	// Skip means the plugin has nothing to do for this pod (PreFilter,
	// PreScore), so its Filter or Score is skipped too.
	Skip
	// Wait means a Permit plugin holds the pod on its node until the
	// plugin, or someone through the framework's waiting pods, allows or
	// rejects it, or its timeout passes.
	Wait
)

var codeNames = [...]string{"Success", "Error", "Unschedulable", "UnschedulableAndUnresolvable", "Skip", "Wait"}

func (c Code) String() string {
	if int(c) < len(codeNames) {
		return codeNames[c]
	}
	return "Unknown"
}

// Status is a plugin's result. A nil *Status means Success.
type Status struct {
	code    Code
	reasons []string
	err     error
	plugin  string
}

// NewStatus makes a Status with a code and reasons (Kubernetes' words, e.g.
// "Insufficient cpu").
func NewStatus(code Code, reasons ...string) *Status {
	return &Status{code: code, reasons: reasons}
}

// AsStatus wraps an internal error as an Error status.
func AsStatus(err error) *Status {
	if err == nil {
		return nil
	}
	return &Status{code: Error, reasons: []string{err.Error()}, err: err}
}

// Code returns the status code; nil is Success.
func (s *Status) Code() Code {
	if s == nil {
		return Success
	}
	return s.code
}

// IsSuccess reports Success (or nil).
func (s *Status) IsSuccess() bool { return s.Code() == Success }

// IsSkip reports Skip.
func (s *Status) IsSkip() bool { return s.Code() == Skip }

// IsWait reports Wait.
func (s *Status) IsWait() bool { return s.Code() == Wait }

// IsRejected reports Unschedulable or UnschedulableAndUnresolvable.
func (s *Status) IsRejected() bool {
	c := s.Code()
	return c == Unschedulable || c == UnschedulableAndUnresolvable
}

// Reasons returns the reasons.
func (s *Status) Reasons() []string {
	if s == nil {
		return nil
	}
	return s.reasons
}

// Message joins the reasons with ", ".
func (s *Status) Message() string {
	if s == nil {
		return ""
	}
	return strings.Join(s.reasons, ", ")
}

// Plugin returns the plugin that produced the status.
func (s *Status) Plugin() string {
	if s == nil {
		return ""
	}
	return s.plugin
}

// WithPlugin records the plugin that produced the status and returns s.
func (s *Status) WithPlugin(name string) *Status {
	if s != nil {
		s.plugin = name
	}
	return s
}

// AsError returns nil for success and rejections' reasons as an error otherwise.
func (s *Status) AsError() error {
	if s.IsSuccess() || s.IsSkip() || s.IsWait() {
		return nil
	}
	if s.err != nil {
		return s.err
	}
	return errors.New(s.Message())
}

func (s *Status) String() string {
	if s == nil {
		return "Success"
	}
	return s.code.String() + ": " + s.Message()
}
