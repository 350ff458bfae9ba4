package storage

import (
	"errors"
	"fmt"
	"strconv"
)

// ErrorCode classifies storage errors; the API server maps each to a
// Kubernetes Status reason.
type ErrorCode int

const (
	// ErrCodeKeyNotFound: no object at the key (404 NotFound).
	ErrCodeKeyNotFound ErrorCode = iota + 1
	// ErrCodeKeyExists: create found a live object (409 AlreadyExists).
	ErrCodeKeyExists
	// ErrCodeResourceVersionConflicts: a precondition or CAS failed
	// (409 Conflict).
	ErrCodeResourceVersionConflicts
	// ErrCodeInvalidObj: the object cannot be stored or decoded.
	ErrCodeInvalidObj
	// ErrCodeUnreachable: etcd did not answer (503/504).
	ErrCodeUnreachable
	// ErrCodeExpired: the requested resourceVersion was compacted
	// (410 Expired, "too old resource version").
	ErrCodeExpired
	// ErrCodeTooLargeResourceVersion: the requested resourceVersion is newer
	// than the store has reached within the wait (504 Timeout with a
	// ResourceVersionTooLarge cause).
	ErrCodeTooLargeResourceVersion
	// ErrCodeInvalidArgument: a malformed resourceVersion, continue token or
	// option combination (400 BadRequest).
	ErrCodeInvalidArgument
)

// Error is a storage error about one key.
type Error struct {
	Code ErrorCode
	Key  string
	// ResourceVersion is the revision involved, when there is one.
	ResourceVersion int64
	// Message is a human-readable description.
	Message string
	// Err is the underlying cause, if any.
	Err error
	// Continue, on an ErrCodeExpired list error, is a token that continues
	// the list at the latest revision (inconsistently); the API server puts
	// it in the 410 Status's metadata.continue as kube-apiserver does.
	Continue string
}

func (e *Error) Error() string {
	msg := e.Message
	if msg == "" {
		msg = codeText[e.Code]
	}
	if e.Err != nil {
		return fmt.Sprintf("%s, key: %q, resourceVersion: %d: %v", msg, e.Key, e.ResourceVersion, e.Err)
	}
	return fmt.Sprintf("%s, key: %q, resourceVersion: %d", msg, e.Key, e.ResourceVersion)
}

func (e *Error) Unwrap() error { return e.Err }

var codeText = map[ErrorCode]string{
	ErrCodeKeyNotFound:              "key not found",
	ErrCodeKeyExists:                "key exists",
	ErrCodeResourceVersionConflicts: "resource version conflicts",
	ErrCodeInvalidObj:               "invalid object",
	ErrCodeUnreachable:              "server unreachable",
	ErrCodeExpired:                  "too old resource version",
	ErrCodeTooLargeResourceVersion:  "too large resource version",
	ErrCodeInvalidArgument:          "invalid argument",
}

// NewError builds an Error.
func NewError(code ErrorCode, key string, rv int64, msg string, cause error) *Error {
	return &Error{Code: code, Key: key, ResourceVersion: rv, Message: msg, Err: cause}
}

// CodeOf returns the ErrorCode of err, or 0 when err is not a storage error.
func CodeOf(err error) ErrorCode {
	var se *Error
	if errors.As(err, &se) {
		return se.Code
	}
	return 0
}

// IsNotFound reports whether err is ErrCodeKeyNotFound.
func IsNotFound(err error) bool { return CodeOf(err) == ErrCodeKeyNotFound }

// IsExists reports whether err is ErrCodeKeyExists.
func IsExists(err error) bool { return CodeOf(err) == ErrCodeKeyExists }

// IsConflict reports whether err is ErrCodeResourceVersionConflicts.
func IsConflict(err error) bool { return CodeOf(err) == ErrCodeResourceVersionConflicts }

// IsExpired reports whether err is ErrCodeExpired.
func IsExpired(err error) bool { return CodeOf(err) == ErrCodeExpired }

// ParseResourceVersion parses a resourceVersion parameter ("" and "0" are
// 0); anything else that is not a non-negative integer is
// ErrCodeInvalidArgument about key.
func ParseResourceVersion(key, rv string) (int64, error) {
	if rv == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(rv, 10, 64)
	if err != nil || n < 0 {
		return 0, NewError(ErrCodeInvalidArgument, key, 0, fmt.Sprintf("invalid resource version: %q", rv), err)
	}
	return n, nil
}
