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
// object name, into the Kubernetes Status error the client receives.
func ToStatusError(err error, gr schema.GroupResource, name string) *apierrors.StatusError {
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
		return storageError(sterr, gr, name)
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

// storageError maps a storage error to its API error, as kube-apiserver's
// storage error interpretation does.
func storageError(e *storage.Error, gr schema.GroupResource, name string) *apierrors.StatusError {
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
		return apierrors.NewServerTimeout(gr, "get", 2)
	}
	return apierrors.NewInternalError(e)
}

// optimisticLockErrorMsg is kube-apiserver's message for a stale
// resourceVersion.
const optimisticLockErrorMsg = "the object has been modified; please apply your changes to the latest version and try again"
