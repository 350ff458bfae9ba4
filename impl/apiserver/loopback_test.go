package apiserver_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/kubeproof/kubeproof/impl/apiserver"
)

// The server calls itself as kube-apiserver's loopback client does: at the
// address it listens on, over TLS under the loopback server name (the
// server presents a certificate of its own for it, which LoopbackClient
// trusts, though the serving certificate names neither that name nor
// anything the loopback client checks), with a bearer token that stands
// for system:apiserver in system:authenticated and system:masters.
// Clients asking for no server name still get the serving certificate.
func TestLoopbackClientIsTheServerItself(t *testing.T) {
	e := newEnv(t, nil)
	addr, err := e.srv.LoopbackAddress()
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.TrimPrefix(e.url, "https://"); addr != want {
		t.Fatalf("loopback address %s, want %s", addr, want)
	}
	tlsCfg, token := e.srv.LoopbackClient()
	if tlsCfg.ServerName != apiserver.LoopbackServerName || token == "" {
		t.Fatalf("server name %q, token %q", tlsCfg.ServerName, token)
	}
	tlsCfg.NextProtos = []string{"http/1.1"}
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg}}
	t.Cleanup(c.CloseIdleConnections)
	u := e.selfSubject(c, token)
	if u.Username != apiserver.APIServerUser || u.UID == "" || !slices.Equal(u.Groups, []string{"system:authenticated", "system:masters"}) {
		t.Fatalf("loopback user %+v", u)
	}
	// A wrong token is refused, not anonymous.
	r := e.doWith(c, http.MethodGet, "/api/v1/namespaces", nil, "Authorization", "Bearer x"+token)
	if r.code != http.StatusUnauthorized {
		t.Fatalf("wrong token: code %d: %s", r.code, r.body)
	}
	// Without the loopback server name the serving certificate answers:
	// the loopback roots do not trust it.
	other := tlsCfg.Clone()
	other.ServerName = "localhost"
	oc := &http.Client{Transport: &http.Transport{TLSClientConfig: other}}
	t.Cleanup(oc.CloseIdleConnections)
	if _, err := oc.Get(e.url + "/readyz"); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("serving certificate trusted by the loopback roots: %v", err)
	}
	if resp, err := e.anon.Get(e.url + "/readyz"); err != nil {
		t.Fatalf("serving certificate: %v", err)
	} else {
		resp.Body.Close()
	}
}
