//go:build unix

package secureserving

import (
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// socketOptions sets SO_REUSEPORT (--permit-port-sharing) and
// SO_REUSEADDR (--permit-address-sharing) on the listening socket before
// it binds.
func socketOptions(reusePort, reuseAddr bool) func(network, address string, c syscall.RawConn) error {
	return func(_, _ string, c syscall.RawConn) error {
		var sockErr error
		err := c.Control(func(fd uintptr) {
			if reusePort {
				if sockErr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1); sockErr != nil {
					sockErr = fmt.Errorf("setting SO_REUSEPORT: %w", sockErr)
					return
				}
			}
			if reuseAddr {
				if sockErr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); sockErr != nil {
					sockErr = fmt.Errorf("setting SO_REUSEADDR: %w", sockErr)
				}
			}
		})
		if err != nil {
			return err
		}
		return sockErr
	}
}
