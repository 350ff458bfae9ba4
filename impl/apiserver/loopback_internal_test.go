package apiserver

import (
	"context"
	"errors"
	"net"
	"slices"
	"testing"
)

// An unspecified listen host is called at the first loopback interface
// address of its family, else localhost (kube-apiserver's
// LoopbackHostPort); any other host as it is.
func TestLoopbackHostPort(t *testing.T) {
	ifaces := func() ([]net.Addr, error) {
		return []net.Addr{
			&net.IPNet{IP: net.ParseIP("192.168.1.2"), Mask: net.CIDRMask(24, 32)},
			&net.IPNet{IP: net.ParseIP("::1"), Mask: net.CIDRMask(128, 128)},
			&net.IPNet{IP: net.ParseIP("127.0.0.1"), Mask: net.CIDRMask(8, 32)},
		}, nil
	}
	v4only := func() ([]net.Addr, error) {
		return []net.Addr{&net.IPNet{IP: net.ParseIP("127.0.0.1"), Mask: net.CIDRMask(8, 32)}}, nil
	}
	failing := func() ([]net.Addr, error) { return nil, errors.New("no interfaces") }
	tests := []struct {
		addr   string
		ifaces func() ([]net.Addr, error)
		want   string
	}{
		{"127.0.0.1:6443", ifaces, "127.0.0.1:6443"},
		{"10.0.0.5:6443", ifaces, "10.0.0.5:6443"},
		{"0.0.0.0:6443", ifaces, "127.0.0.1:6443"},
		{"[::]:6443", ifaces, "[::1]:6443"},
		{"[::]:6443", v4only, "localhost:6443"},
		{"0.0.0.0:6443", failing, "localhost:6443"},
	}
	for _, tt := range tests {
		if got := loopbackHostPort(tt.addr, tt.ifaces); got != tt.want {
			t.Errorf("loopbackHostPort(%s) = %s, want %s", tt.addr, got, tt.want)
		}
	}
}

// The loopback token stands for kube-apiserver 1.37's loopback user
// (AuthorizeClientBearerToken's token map, k8s.io/apiserver
// pkg/server/config.go, and its TestAuthorizeClientBearerTokenRequiredGroups):
// system:apiserver in system:authenticated and system:masters, in that
// order, from the token itself, before any group is added after the
// chain; a UID of its own each start.
func TestLoopbackTokenUser(t *testing.T) {
	l, err := newLoopback()
	if err != nil {
		t.Fatal(err)
	}
	u, ok, err := l.AuthenticateToken(context.Background(), l.token)
	if err != nil || !ok {
		t.Fatalf("loopback token: ok %v, err %v", ok, err)
	}
	if u.Name != "system:apiserver" || u.UID == "" || !slices.Equal(u.Groups, []string{"system:authenticated", "system:masters"}) || len(u.Extra) != 0 {
		t.Errorf("loopback user %+v, want system:apiserver with a UID in system:authenticated, system:masters", u)
	}
	other, err := newLoopback()
	if err != nil {
		t.Fatal(err)
	}
	if other.user.UID == u.UID {
		t.Errorf("two starts share the loopback UID %s", u.UID)
	}
	if _, ok, _ := other.AuthenticateToken(context.Background(), l.token); ok {
		t.Error("another start's loopback token authenticates")
	}
}
