package discovery

import (
	"errors"

	"github.com/kubeproof/kubeproof/impl/apiserver/codec"
)

func asNotAcceptable(err error, target **codec.NotAcceptableError) bool {
	return errors.As(err, target)
}
