package auth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"
)

// TestKeyFiles: signing keys load from PKCS#1, SEC 1 and PKCS#8 PEM;
// verify key files may hold public keys or private keys (their public
// halves), several per file; tokens signed by a loaded key verify with
// the keys loaded from the other file.
func TestKeyFiles(t *testing.T) {
	dir := t.TempDir()
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	ecKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	write := func(name string, blocks ...*pem.Block) string {
		var data []byte
		for _, b := range blocks {
			data = append(data, pem.EncodeToMemory(b)...)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pkcs8, _ := x509.MarshalPKCS8PrivateKey(ecKey)
	sec1, _ := x509.MarshalECPrivateKey(ecKey)
	rsaPub, _ := x509.MarshalPKIXPublicKey(&rsaKey.PublicKey)
	for name, path := range map[string]string{
		"pkcs1": write("rsa.key", &pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(rsaKey)}),
		"sec1":  write("ec.key", &pem.Block{Type: "EC PRIVATE KEY", Bytes: sec1}),
		"pkcs8": write("ec8.key", &pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}),
	} {
		if _, err := LoadSigningKey(path); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := LoadSigningKey(write("pub.pem", &pem.Block{Type: "PUBLIC KEY", Bytes: rsaPub})); err == nil {
		t.Error("a public key loaded as a signing key")
	}
	keys, err := LoadVerifyKeys(write("verify.pem", &pem.Block{Type: "PUBLIC KEY", Bytes: rsaPub}, &pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}))
	if err != nil || len(keys) != 2 {
		t.Fatalf("verify keys: %d %v", len(keys), err)
	}
	if _, err := LoadVerifyKeys(write("empty.pem")); err == nil {
		t.Error("an empty key file loaded")
	}
	for _, signer := range []crypto.Signer{rsaKey, ecKey} {
		tok, err := signJWT(signer, map[string]string{"sub": "x"})
		if err != nil {
			t.Fatal(err)
		}
		var claims map[string]string
		hdr, signing, sig, err := parseJWT(tok, &claims)
		if err != nil {
			t.Fatal(err)
		}
		if err := verifyJWS(hdr.Alg, hdr.Kid, signing, sig, keys); err != nil {
			t.Errorf("%s token: %v", hdr.Alg, err)
		}
		if err := verifyJWS(hdr.Alg, hdr.Kid, signing+"x", sig, keys); err == nil {
			t.Errorf("%s token verified over other content", hdr.Alg)
		}
	}
}
