package auth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"encoding/asn1"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"hash"
	"math/big"
	"os"
	"strings"
)

// JSON Web Tokens (RFC 7519) in JWS compact serialization, signed with
// RS256 (RSA keys) or ES256/ES384/ES512 (EC keys, by curve), as
// kube-apiserver signs service account tokens. Only what service account
// tokens need: sign, verify, decode claims.

var b64 = base64.RawURLEncoding

// jwtHeader is the JOSE header.
type jwtHeader struct {
	Alg string `json:"alg"`
	Kid string `json:"kid,omitempty"`
	Typ string `json:"typ,omitempty"`
}

// KeyID is kube-apiserver's key id of a public key: the unpadded base64url
// SHA-256 of its PKIX DER encoding.
func KeyID(pub crypto.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", fmt.Errorf("encoding public key: %w", err)
	}
	sum := sha256.Sum256(der)
	return b64.EncodeToString(sum[:]), nil
}

// jwsAlgorithm is the JWS alg of a key and the hash it signs.
func jwsAlgorithm(pub crypto.PublicKey) (alg string, h crypto.Hash, err error) {
	switch k := pub.(type) {
	case *rsa.PublicKey:
		return "RS256", crypto.SHA256, nil
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256():
			return "ES256", crypto.SHA256, nil
		case elliptic.P384():
			return "ES384", crypto.SHA384, nil
		case elliptic.P521():
			return "ES512", crypto.SHA512, nil
		}
	}
	return "", 0, fmt.Errorf("unsupported signing key type %T", pub)
}

func newHash(h crypto.Hash) hash.Hash {
	switch h {
	case crypto.SHA384:
		return sha512.New384()
	case crypto.SHA512:
		return sha512.New()
	}
	return sha256.New()
}

// signJWT serializes claims and signs them with key.
func signJWT(key crypto.Signer, claims any) (string, error) {
	alg, h, err := jwsAlgorithm(key.Public())
	if err != nil {
		return "", err
	}
	kid, err := KeyID(key.Public())
	if err != nil {
		return "", err
	}
	hdr, err := json.Marshal(jwtHeader{Alg: alg, Kid: kid})
	if err != nil {
		return "", err
	}
	body, err := json.Marshal(claims)
	if err != nil {
		return "", fmt.Errorf("encoding claims: %w", err)
	}
	signing := b64.EncodeToString(hdr) + "." + b64.EncodeToString(body)
	d := newHash(h)
	d.Write([]byte(signing))
	digest := d.Sum(nil)
	sig, err := key.Sign(rand.Reader, digest, h)
	if err != nil {
		return "", fmt.Errorf("signing token: %w", err)
	}
	if ec, ok := key.Public().(*ecdsa.PublicKey); ok {
		// JWS wants r||s, fixed width, not ASN.1.
		if sig, err = ecdsaASN1ToRaw(sig, ec.Curve); err != nil {
			return "", err
		}
	}
	return signing + "." + b64.EncodeToString(sig), nil
}

// errNotJWT: the string is not a compact JWS at all (another
// authenticator may know it).
var errNotJWT = errors.New("not a JWT")

// parseJWT splits a compact JWS and decodes its header and claims without
// verifying anything.
func parseJWT(token string, claims any) (hdr jwtHeader, signing string, sig []byte, err error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return hdr, "", nil, errNotJWT
	}
	hb, err := b64.DecodeString(parts[0])
	if err != nil {
		return hdr, "", nil, errNotJWT
	}
	if err := json.Unmarshal(hb, &hdr); err != nil || hdr.Alg == "" {
		return hdr, "", nil, errNotJWT
	}
	body, err := b64.DecodeString(parts[1])
	if err != nil {
		return hdr, "", nil, errNotJWT
	}
	if err := json.Unmarshal(body, claims); err != nil {
		return hdr, "", nil, fmt.Errorf("decoding token claims: %w", err)
	}
	if sig, err = b64.DecodeString(parts[2]); err != nil {
		return hdr, "", nil, errors.New("malformed token signature")
	}
	return hdr, parts[0] + "." + parts[1], sig, nil
}

// verifyJWS checks sig over signing with one of keys (the one whose key id
// is kid first; every key when kid matches none).
func verifyJWS(alg, kid, signing string, sig []byte, keys []crypto.PublicKey) error {
	try := func(pub crypto.PublicKey) bool {
		want, h, err := jwsAlgorithm(pub)
		if err != nil || want != alg {
			return false
		}
		d := newHash(h)
		d.Write([]byte(signing))
		digest := d.Sum(nil)
		switch k := pub.(type) {
		case *rsa.PublicKey:
			return rsa.VerifyPKCS1v15(k, h, digest, sig) == nil
		case *ecdsa.PublicKey:
			size := (k.Curve.Params().BitSize + 7) / 8
			if len(sig) != 2*size {
				return false
			}
			r := new(big.Int).SetBytes(sig[:size])
			s := new(big.Int).SetBytes(sig[size:])
			return ecdsa.Verify(k, digest, r, s)
		}
		return false
	}
	for _, k := range keys {
		if id, err := KeyID(k); err == nil && id == kid && try(k) {
			return nil
		}
	}
	for _, k := range keys {
		if try(k) {
			return nil
		}
	}
	return errors.New("invalid token signature")
}

func ecdsaASN1ToRaw(der []byte, curve elliptic.Curve) ([]byte, error) {
	var v struct{ R, S *big.Int }
	if _, err := asn1.Unmarshal(der, &v); err != nil {
		return nil, fmt.Errorf("decoding ECDSA signature: %w", err)
	}
	size := (curve.Params().BitSize + 7) / 8
	out := make([]byte, 2*size)
	v.R.FillBytes(out[:size])
	v.S.FillBytes(out[size:])
	return out, nil
}

// LoadSigningKey reads a PEM private key (PKCS#1 RSA, SEC 1 EC or PKCS#8),
// as --service-account-signing-key-file.
func LoadSigningKey(path string) (crypto.Signer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading signing key: %w", err)
	}
	for rest := data; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			return nil, fmt.Errorf("%s: no private key found", path)
		}
		if k, err := parsePrivateKey(b); err == nil {
			return k, nil
		}
	}
}

func parsePrivateKey(b *pem.Block) (crypto.Signer, error) {
	switch b.Type {
	case "RSA PRIVATE KEY":
		return x509.ParsePKCS1PrivateKey(b.Bytes)
	case "EC PRIVATE KEY":
		return x509.ParseECPrivateKey(b.Bytes)
	case "PRIVATE KEY":
		k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
		if err != nil {
			return nil, err
		}
		s, ok := k.(crypto.Signer)
		if !ok {
			return nil, fmt.Errorf("unsupported private key %T", k)
		}
		return s, nil
	}
	return nil, fmt.Errorf("not a private key block: %s", b.Type)
}

// LoadVerifyKeys reads every public key in a PEM file: public keys,
// certificates, or private keys (whose public half is used), as
// --service-account-key-file.
func LoadVerifyKeys(path string) ([]crypto.PublicKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading service account key file: %w", err)
	}
	var out []crypto.PublicKey
	for rest := data; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		switch b.Type {
		case "PUBLIC KEY":
			k, err := x509.ParsePKIXPublicKey(b.Bytes)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			out = append(out, k)
		case "RSA PUBLIC KEY":
			k, err := x509.ParsePKCS1PublicKey(b.Bytes)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			out = append(out, k)
		case "CERTIFICATE":
			c, err := x509.ParseCertificate(b.Bytes)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			out = append(out, c.PublicKey)
		default:
			if k, err := parsePrivateKey(b); err == nil {
				out = append(out, k.Public())
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no public keys found", path)
	}
	return out, nil
}
