package registry

import (
	"sort"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubeproof/kubeproof/impl/apiserver/resource"
)

// errorKeys renders errors as "<type> <field>" (e.g. "Required value
// spec.containers") for exact comparisons.
func errorKeys(errs field.ErrorList) []string {
	keys := make([]string, 0, len(errs))
	for _, e := range errs {
		keys = append(keys, string(e.Type)+" "+e.Field)
	}
	sort.Strings(keys)
	return keys
}

// wantErrors checks that errs are exactly the given "<type> <field>" keys.
func wantErrors(t *testing.T, errs field.ErrorList, want ...string) {
	t.Helper()
	got := errorKeys(errs)
	sort.Strings(want)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("errors:\n  got  %q\n  want %q\n  (%v)", got, want, errs.ToAggregate())
	}
}

// Short names of field error types.
const (
	required     = string(field.ErrorTypeRequired)
	invalid      = string(field.ErrorTypeInvalid)
	forbidden    = string(field.ErrorTypeForbidden)
	duplicate    = string(field.ErrorTypeDuplicate)
	notSupported = string(field.ErrorTypeNotSupported)
	notFound     = string(field.ErrorTypeNotFound)
	tooLong      = string(field.ErrorTypeTooLong)
	tooMany      = string(field.ErrorTypeTooMany)
)

func ptr[T any](v T) *T { return &v }

// assertColumns checks column names in order; a trailing "*" marks a
// priority-1 (-o wide) column.
func assertColumns(t *testing.T, cols []metav1.TableColumnDefinition, want string) {
	t.Helper()
	var got []string
	for _, c := range cols {
		name := c.Name
		if c.Priority == 1 {
			name += "*"
		}
		got = append(got, name)
	}
	if strings.Join(got, ",") != want {
		t.Errorf("columns %s, want %s", strings.Join(got, ","), want)
	}
}

var appsV1 = appsv1.SchemeGroupVersion

type runtimeObject = runtime.Object

type resourceWithStrategy = *resource.Resource
