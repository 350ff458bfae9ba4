package auth

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"sync"

	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// NodeTokens authenticates the bearer tokens an API server hands to the
// simulated nodes running in its own process: each token stands for
// system:node:<name> in groups system:nodes and system:authenticated,
// exactly the user the node's client certificate (CN system:node:<name>,
// O system:nodes) gives through X509, so the Node authorizer and
// NodeRestriction judge the node's requests as before. The tokens are
// random, live in this value only (never on disk) and die with the
// process, as kube-apiserver keeps its own loopback client's token in
// memory. A real kubelet, or a node of another process, authenticates
// with its certificate.
//
// Why tokens at all: clients that differ only in their bearer token can
// share one transport and so a few HTTP/2 connections, where clients with
// their own certificates each need their own TLS connection.
type NodeTokens struct {
	mu     sync.RWMutex
	tokens map[string]*request.User
}

// NewNodeTokens returns an authenticator that knows no token yet.
func NewNodeTokens() *NodeTokens {
	return &NodeTokens{tokens: map[string]*request.User{}}
}

// nodeTokenBytes is a token's entropy (256 bits, base64url-encoded).
const nodeTokenBytes = 32

// Issue returns a new random token for node nodeName. Issuing again for
// the same node adds a second token; both stay valid.
func (t *NodeTokens) Issue(nodeName string) (string, error) {
	if nodeName == "" {
		return "", errors.New("issuing a node token: empty node name")
	}
	b := make([]byte, nodeTokenBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("issuing a token for node %s: %w", nodeName, err)
	}
	token := base64.RawURLEncoding.EncodeToString(b)
	u := &request.User{Name: nodeUserPrefix + nodeName, Groups: []string{nodesGroup, AuthenticatedGroup}}
	t.mu.Lock()
	t.tokens[token] = u
	t.mu.Unlock()
	return token, nil
}

// The node identity, as the node authorizer (auth/node) and the CSR
// approver name it.
const (
	nodeUserPrefix = "system:node:"
	nodesGroup     = "system:nodes"
)

// AuthenticateToken implements TokenAuthenticator. The user is shared:
// callers must not change it (as X509's remembered users).
func (t *NodeTokens) AuthenticateToken(_ context.Context, token string) (*request.User, bool, error) {
	t.mu.RLock()
	u, ok := t.tokens[token]
	t.mu.RUnlock()
	return u, ok, nil
}
