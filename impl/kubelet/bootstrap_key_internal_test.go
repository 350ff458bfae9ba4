package kubelet

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/util/certificate"
	"k8s.io/client-go/util/keyutil"
)

// TestBootstrapKeyReusesTheCurrentPairs: as upstream's bootstrap, a
// cert-dir whose current pair holds an expired certificate has its key
// asked with again (no kubelet-client.key.tmp made); without a pair the
// key is kubelet-client.key.tmp's, made once and reused.
func TestBootstrapKeyReusesTheCurrentPairs(t *testing.T) {
	t.Run("expired pair", func(t *testing.T) {
		dir := t.TempDir()
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := ClientCertificateTemplate("n1")
		der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{SerialNumber: big.NewInt(1), Subject: tmpl.Subject,
			NotBefore: time.Now().Add(-2 * time.Hour), NotAfter: time.Now().Add(-time.Hour)},
			&x509.Certificate{SerialNumber: big.NewInt(1), Subject: tmpl.Subject}, &key.PublicKey, key)
		if err != nil {
			t.Fatal(err)
		}
		keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
		if err != nil {
			t.Fatal(err)
		}
		store, err := certificate.NewFileStore(clientCertPrefix, dir, dir, "", "")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := store.Update(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM); err != nil {
			t.Fatal(err)
		}
		got, err := bootstrapKey(store, dir)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, keyPEM) {
			t.Errorf("bootstrap key is not the expired pair's:\n%s\nwant\n%s", got, keyPEM)
		}
		if _, err := os.Stat(filepath.Join(dir, clientKeyTmpFile)); !os.IsNotExist(err) {
			t.Errorf("%s made though the pair's key is reused: %v", clientKeyTmpFile, err)
		}
	})
	t.Run("no pair", func(t *testing.T) {
		dir := t.TempDir()
		store, err := certificate.NewFileStore(clientCertPrefix, dir, dir, "", "")
		if err != nil {
			t.Fatal(err)
		}
		first, err := bootstrapKey(store, dir)
		if err != nil {
			t.Fatal(err)
		}
		onDisk, err := os.ReadFile(filepath.Join(dir, clientKeyTmpFile))
		if err != nil || !bytes.Equal(onDisk, first) {
			t.Fatalf("%s = %q (%v), want the key returned", clientKeyTmpFile, onDisk, err)
		}
		again, err := bootstrapKey(store, dir)
		if err != nil || !bytes.Equal(again, first) {
			t.Errorf("second bootstrap key differs (%v): a restarted bootstrap must reuse %s", err, clientKeyTmpFile)
		}
	})
}
