package registry

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
)

// tableSpec is how a kind is shown by kubectl get: its columns (Priority 1
// columns only with -o wide) and a function giving one row's cells.
type tableSpec[T object] struct {
	columns []metav1.TableColumnDefinition
	// cells returns one value per column.
	cells func(obj T, now time.Time) []any
	// conditions, if set, gives the row's conditions (e.g. Completed pods).
	conditions func(obj T) []metav1.TableRowCondition
}

// render makes obj's row. The full object travels in Object.Object; the API
// server serializes it (or its PartialObjectMetadata) per TableOptions.
func (t *tableSpec[T]) render(obj T, now time.Time) metav1.TableRow {
	row := metav1.TableRow{
		Cells:  t.cells(obj, now),
		Object: runtime.RawExtension{Object: obj},
	}
	if t.conditions != nil {
		row.Conditions = t.conditions(obj)
	}
	return row
}

var objectMetaDoc = metav1.ObjectMeta{}.SwaggerDoc()

// nameColumn is the NAME column every table starts with.
func nameColumn() metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name", Description: objectMetaDoc["name"]}
}

// ageColumn is the AGE column.
func ageColumn() metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: "Age", Type: "string", Description: objectMetaDoc["creationTimestamp"]}
}

func column(name, typ, description string) metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: name, Type: typ, Description: description}
}

func wideColumn(name, typ, description string) metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: name, Type: typ, Description: description, Priority: 1}
}

// age renders how long ago ts was as kubectl does ("5m", "3d"), or
// "<unknown>" for a zero time.
func age(ts metav1.Time, now time.Time) string {
	if ts.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(ts.Time))
}

// defaultTable is the table of kinds without a printer of their own:
// NAME and CREATED AT, as the API server's default table convertor shows.
func defaultTable[T object]() *tableSpec[T] {
	return &tableSpec[T]{
		columns: []metav1.TableColumnDefinition{
			nameColumn(),
			{Name: "Created At", Type: "date", Description: objectMetaDoc["creationTimestamp"]},
		},
		cells: func(obj T, _ time.Time) []any {
			return []any{obj.GetName(), createdAt(obj.GetCreationTimestamp())}
		},
	}
}

// createdAt renders a CREATED AT cell (RFC 3339, UTC).
func createdAt(ts metav1.Time) string {
	if ts.IsZero() {
		return "<unknown>"
	}
	return ts.UTC().Format(time.RFC3339)
}
