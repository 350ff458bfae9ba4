package endpoints

import (
	"context"
	"errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"net/http"
	"time"
)

func asMaxBytes(err error, target **http.MaxBytesError) bool { return errors.As(err, target) }

func contextWithTimeout(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(parent, d)
}

func extractList(list runtime.Object) ([]runtime.Object, error) { return meta.ExtractList(list) }
