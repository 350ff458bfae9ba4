//go:build !unix

package secureserving

import (
	"errors"
	"syscall"
)

// socketOptions: port and address sharing are for Unix sockets only.
func socketOptions(reusePort, reuseAddr bool) func(network, address string, c syscall.RawConn) error {
	return func(string, string, syscall.RawConn) error {
		return errors.New("--permit-port-sharing and --permit-address-sharing are not supported on this platform")
	}
}
