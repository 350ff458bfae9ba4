package endpoints

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeproof/kubeproof/impl/apiserver/codec"
	"github.com/kubeproof/kubeproof/impl/storage"
)

// ToStatusError turns any error met while serving a request on resource gr,
// object name, into the Kubernetes Status error the client receives. verb
// is the storage operation that failed (VerbGet, VerbList, VerbWatch,
// VerbCreate, VerbUpdate or VerbDelete): kube-apiserver interprets storage
// errors per operation and names it in a ServerTimeout.
func ToStatusError(err error, verb string, gr schema.GroupResource, name string) *apierrors.StatusError {
	var se *apierrors.StatusError
	if errors.As(err, &se) {
		return se
	}
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		return &apierrors.StatusError{ErrStatus: st.Status()}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return apierrors.NewTimeoutError("request did not complete within the allowed duration", 0)
	}
	if errors.Is(err, context.Canceled) {
		return apierrors.NewTimeoutError("request was cancelled", 0)
	}
	var sterr *storage.Error
	if errors.As(err, &sterr) {
		return storageError(sterr, verb, gr, name)
	}
	var na *codec.NotAcceptableError
	if errors.As(err, &na) {
		return &apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure, Code: http.StatusNotAcceptable,
			Reason: metav1.StatusReasonNotAcceptable, Message: na.Error(),
		}}
	}
	var um *codec.UnsupportedMediaTypeError
	if errors.As(err, &um) {
		return &apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure, Code: http.StatusUnsupportedMediaType,
			Reason: metav1.StatusReasonUnsupportedMediaType, Message: um.Error(),
		}}
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", mbe.Limit))
	}
	return apierrors.NewInternalError(err)
}

// The storage operations whose errors ToStatusError interprets, named as
// kube-apiserver names them in a ServerTimeout ("The create operation
// against pods could not be completed at this time").
const (
	VerbGet    = "get"
	VerbList   = "list"
	VerbWatch  = "watch"
	VerbCreate = "create"
	VerbUpdate = "update"
	VerbDelete = "delete"
)

// storageVerb is the storage operation behind a request with the given
// Kubernetes verb, for errors not interpreted where the storage call is
// made: a patch is an update (kube-apiserver patches through its store's
// Update), a deletecollection's own storage call is its list (each item's
// delete interprets its own errors). An unknown verb counts as a get.
func storageVerb(requestVerb string) string {
	switch requestVerb {
	case VerbGet, VerbList, VerbWatch, VerbCreate, VerbUpdate, VerbDelete:
		return requestVerb
	case "patch":
		return VerbUpdate
	case "deletecollection":
		return VerbList
	}
	return VerbGet
}

// storageError maps a storage error from operation verb to its API error,
// as kube-apiserver's storage error interpretation (one function per
// operation) does. An unreachable store is a 500 ServerTimeout naming the
// operation, retry in 2 s, for a get, list, create, update or delete; a
// watch is not interpreted so by kube-apiserver: the only watch that fails
// so at its start is one on a watch cache that is (re)initializing, which
// kube-apiserver answers 429 TooManyRequests, retry in 1 s.
func storageError(e *storage.Error, verb string, gr schema.GroupResource, name string) *apierrors.StatusError {
	switch e.Code {
	case storage.ErrCodeKeyNotFound:
		return apierrors.NewNotFound(gr, name)
	case storage.ErrCodeKeyExists:
		return apierrors.NewAlreadyExists(gr, name)
	case storage.ErrCodeResourceVersionConflicts:
		msg := e.Message
		if msg == "" || !strings.HasPrefix(msg, "Precondition failed") {
			msg = optimisticLockErrorMsg
		}
		return apierrors.NewConflict(gr, name, errors.New(msg))
	case storage.ErrCodeExpired:
		// The store words its messages as Kubernetes does ("too old
		// resource version: 5 (10)", "The resourceVersion for the provided
		// list is too old."); only a bare error gets the generic one.
		msg := e.Message
		if msg == "" {
			msg = "too old resource version"
			if e.ResourceVersion != 0 {
				msg = fmt.Sprintf("%s: %d", msg, e.ResourceVersion)
			}
		}
		se := apierrors.NewResourceExpired(msg)
		// An expired continue token comes with one that continues at the
		// latest revision, which kube-apiserver returns in the Status.
		se.ErrStatus.ListMeta.Continue = e.Continue
		return se
	case storage.ErrCodeTooLargeResourceVersion:
		se := apierrors.NewTimeoutError(fmt.Sprintf("Too large resource version: %d", e.ResourceVersion), 1)
		se.ErrStatus.Details.Causes = []metav1.StatusCause{{
			Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version",
		}}
		return se
	case storage.ErrCodeInvalidArgument:
		if e.Message != "" {
			return apierrors.NewBadRequest(e.Message)
		}
		return apierrors.NewBadRequest(e.Error())
	case storage.ErrCodeUnreachable:
		if verb == VerbWatch {
			msg := e.Message
			if msg == "" {
				msg = watchCacheNotReadyMsg
			}
			return apierrors.NewTooManyRequests(msg, 1)
		}
		return apierrors.NewServerTimeout(gr, verb, 2)
	}
	return apierrors.NewInternalError(e)
}

// watchCacheNotReadyMsg is kube-apiserver's message for a watch on a watch
// cache that is not ready.
const watchCacheNotReadyMsg = "storage is (re)initializing"

// optimisticLockErrorMsg is kube-apiserver's message for a stale
// resourceVersion.
const optimisticLockErrorMsg = "the object has been modified; please apply your changes to the latest version and try again"
