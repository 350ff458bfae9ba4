package fieldmanager

import (
	"log/slog"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"

	"github.com/kubeproof/kubeproof/impl/apiserver/openapi"
	"github.com/kubeproof/kubeproof/impl/apiserver/resource"
)

// converters caches one type converter per kind: it depends only on the
// kind's Go types, so every server in the process shares it.
var converters sync.Map // schema.GroupVersionKind -> func() managedfields.TypeConverter

// TypeConverterFor returns the structured-merge-diff type converter of
// res's kind, built on first use from the OpenAPI schema the server
// publishes for it (list types and map keys included, so containers merge
// by name). A kind the schemas do not describe gets a deduced converter,
// which treats every list as atomic.
func TypeConverterFor(res *resource.Resource) managedfields.TypeConverter {
	gvk := res.GroupVersionKind()
	get, _ := converters.LoadOrStore(gvk, sync.OnceValue(func() managedfields.TypeConverter {
		return buildConverter(res, gvk)
	}))
	return get.(func() managedfields.TypeConverter)()
}

func buildConverter(res *resource.Resource, gvk schema.GroupVersionKind) managedfields.TypeConverter {
	tc, err := openapi.NewTypeConverter([]*resource.Resource{res})
	if err == nil {
		probe := res.New()
		probe.GetObjectKind().SetGroupVersionKind(gvk)
		if _, err = tc.ObjectToTyped(probe); err == nil {
			return tc
		}
	}
	slog.Warn("no OpenAPI schema for server-side apply; deducing the type from objects", "kind", gvk, "err", err)
	return managedfields.NewDeducedTypeConverter()
}
