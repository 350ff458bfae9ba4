package endpoints

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubeproof/kubeproof/impl/apiserver/admission"
	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// CreateObjectManaged is CreateObject for a create kube-apiserver makes
// through its loopback client, which its field manager records as every
// POST: obj's fields go into managedFields under manager (operation
// Update), as a POST without fieldManager records them under its user
// agent's product ("kube-apiserver" for the loopback client).
func (h *Handler) CreateObjectManaged(ctx context.Context, info *request.Info, obj runtime.Object, manager string) (runtime.Object, error) {
	fm, err := h.fieldManager(modeMain)
	if err != nil {
		return nil, err
	}
	// As a POST's: defaulted first, so the defaults are the manager's.
	h.res.Strategy.Default(obj)
	obj = fm.UpdateCreate(h.empty, obj, manager)
	return h.createObject(ctx, info, obj, admission.RequestOptions{}, true)
}
