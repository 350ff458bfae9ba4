package admission

import (
	"encoding/json"
	"mime"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kjson "sigs.k8s.io/json"
)

// maxErrorBodyText is how much of a text error body goes into the
// message (client-go's REST client keeps 2,048 bytes).
const maxErrorBodyText = 2048

// webhookStatusError is the error a webhook's answer with HTTP status code
// is, as kube-apiserver's webhook REST client makes it; nil for a success
// (200 to 206). A body holding a failure Status (kind Status, apiVersion
// v1 or none) is that Status, whatever the Content-Type; otherwise the
// error is client-go's generic one for the code, which carries the body
// (trimmed, at most 2,048 bytes) for codes whose message includes the
// server's (403, 5xx...) when the body is text (a text/* or no
// Content-Type), "unknown" when it is not.
func webhookStatusError(code int, contentType string, body []byte) error {
	if code >= http.StatusOK && code <= http.StatusPartialContent {
		return nil
	}
	if st, ok := failureStatus(body); ok {
		return &apierrors.StatusError{ErrStatus: st}
	}
	message := "unknown"
	if isTextContent(contentType) {
		if len(body) > maxErrorBodyText {
			body = body[:maxErrorBodyText]
		}
		message = strings.TrimSpace(string(body))
	}
	return apierrors.NewGenericServerResponse(code, http.MethodPost, schema.GroupResource{}, "", message, 0, true)
}

// failureStatus reads body as a v1 Status whose status is Failure. As
// client-go's JSON serializer reads it, kind and apiVersion are found
// whatever their letter case, the Status's other fields only under their
// exact names.
func failureStatus(body []byte) (metav1.Status, bool) {
	var tm struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := json.Unmarshal(body, &tm); err != nil || tm.Kind != "Status" || (tm.APIVersion != "" && tm.APIVersion != "v1") {
		return metav1.Status{}, false
	}
	var st metav1.Status
	if err := kjson.UnmarshalCaseSensitivePreserveInts(body, &st); err != nil {
		return metav1.Status{}, false
	}
	st.TypeMeta = metav1.TypeMeta{Kind: tm.Kind, APIVersion: tm.APIVersion}
	return st, st.Status == metav1.StatusFailure
}

// isTextContent: no Content-Type, or a text/* one.
func isTextContent(contentType string) bool {
	if contentType == "" {
		return true
	}
	media, _, err := mime.ParseMediaType(contentType)
	return err == nil && strings.HasPrefix(media, "text/")
}
