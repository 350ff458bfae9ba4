package etcd3

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path"
	"strings"
)

// continueToken is the decoded form of a list's continue parameter, in the
// encoding Kubernetes uses (base64 of this JSON), so tokens look the same to
// clients.
type continueToken struct {
	APIVersion      string `json:"v"`
	ResourceVersion int64  `json:"rv"`
	StartKey        string `json:"start"`
}

const continueTokenVersion = "meta.k8s.io/v1"

// EncodeContinue returns the token for continuing a list under keyPrefix at
// key, read at resourceVersion (-1: at the latest revision, after the
// original one was compacted).
func EncodeContinue(key, keyPrefix string, resourceVersion int64) (string, error) {
	next := strings.TrimPrefix(key, keyPrefix)
	if next == key {
		return "", fmt.Errorf("unable to encode next field: the key %q is not under the prefix %q", key, keyPrefix)
	}
	out, err := json.Marshal(&continueToken{APIVersion: continueTokenVersion, ResourceVersion: resourceVersion, StartKey: next})
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(out), nil
}

// DecodeContinue returns the full key to start from and the revision to read
// at, or an error saying why the token is not valid.
func DecodeContinue(token, keyPrefix string) (fromKey string, rv int64, err error) {
	data, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return "", 0, fmt.Errorf("%w: %v", errInvalidContinue, err)
	}
	var c continueToken
	if err := json.Unmarshal(data, &c); err != nil {
		return "", 0, fmt.Errorf("%w: %v", errInvalidContinue, err)
	}
	switch c.APIVersion {
	case continueTokenVersion:
		if c.ResourceVersion == 0 {
			return "", 0, fmt.Errorf("%w: incorrect encoded start resourceVersion (version %s)", errInvalidContinue, continueTokenVersion)
		}
		if len(c.StartKey) == 0 {
			return "", 0, fmt.Errorf("%w: encoded start key empty (version %s)", errInvalidContinue, continueTokenVersion)
		}
		// A token must not climb out of the listed prefix.
		key := c.StartKey
		if !strings.HasPrefix(key, "/") {
			key = "/" + key
		}
		cleaned := path.Clean(key)
		if cleaned != key {
			return "", 0, fmt.Errorf("%w: %s", errInvalidContinue, c.StartKey)
		}
		return keyPrefix + cleaned[1:], c.ResourceVersion, nil
	default:
		return "", 0, fmt.Errorf("%w: server does not recognize this encoded version %q", errInvalidContinue, c.APIVersion)
	}
}

var errInvalidContinue = fmt.Errorf("continue key is not valid")
