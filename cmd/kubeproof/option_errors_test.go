package main

import (
	"context"
	"io"
	"os"
	"testing"
	"time"
)

// runCommandErr runs the kubeproof command line args and returns its
// error; a command that starts is ended after a while by its context.
func runCommandErr(t *testing.T, args ...string) error {
	t.Helper()
	root := newRootCommand()
	root.SetArgs(args)
	root.SetOut(io.Discard)
	root.SetErr(io.Discard)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second) // ends a command that started
	defer cancel()
	return root.ExecuteContext(ctx)
}

// TestAPIServerReportsEveryOptionError: as kube-apiserver, `kubeproof
// apiserver` validates every option group (etcd, authentication,
// authorization, audit, admission, in kube-apiserver's order) and reports
// all their errors as one aggregate, each in kube-apiserver's words,
// before it reads any file or dials etcd.
func TestAPIServerReportsEveryOptionError(t *testing.T) {
	certDir := t.TempDir()
	err := runCommandErr(t, "apiserver", "--cert-dir", certDir,
		"--authorization-mode", "RBAC,Foo,RBAC,Webhook",
		"--service-account-issuer", "https://a", "--service-account-issuer", "https://a", "--service-account-issuer", "",
		"--service-account-key-file", "/nonexistent/sa.pub",
		"--audit-log-path", "-", "--audit-log-mode", "async", "--audit-log-version", "audit.k8s.io/v1beta1",
		"--audit-policy-file", "/nonexistent/policy.yaml",
		"--enable-admission-plugins", "Nope,AlwaysPullImages", "--disable-admission-plugins", "AlwaysPullImages,Nada")
	want := `[--etcd-servers must be specified, ` +
		`service-account-issuer "https://a" is already specified, service-account-issuer should not be an empty string, ` +
		`authorization-mode "Foo" is not a valid mode, authorization-mode Webhook's authorization config file not passed, ` +
		`authorization-mode ["RBAC" "Foo" "RBAC" "Webhook"] has mode specified more than once, ` +
		`invalid audit log mode async, allowed modes are "batch,blocking,blocking-strict", invalid group version, allowed versions are ["audit.k8s.io/v1"], ` +
		`enable-admission-plugins plugin "Nope" is unknown, disable-admission-plugins plugin "Nada" is unknown, ` +
		`[AlwaysPullImages] in enable-admission-plugins and disable-admission-plugins overlapped]`
	if err == nil || err.Error() != want {
		t.Fatalf("error\n%v\nwant\n%s", err, want)
	}
	assertEmptyDir(t, certDir) // no certificate generated
}

// assertEmptyDir fails the test unless dir is empty: the command wrote
// nothing there.
func assertEmptyDir(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		t.Errorf("%s written in %s", e.Name(), dir)
	}
}

// TestUpReportsEveryOptionError: `kubeproof up` takes the API server's
// request-chain flags and reports all their errors together, before it
// starts anything (nothing is written in its data directory).
func TestUpReportsEveryOptionError(t *testing.T) {
	dataDir := t.TempDir()
	err := runCommandErr(t, "up", "--data-dir", dataDir, "--port", "0",
		"--authorization-mode", "Node,Bogus", "--authorization-webhook-config-file", "/nonexistent/hook",
		"--audit-log-path", "-", "--audit-log-format", "xml", "--disable-admission-plugins", "Nope")
	want := `[authorization-mode "Bogus" is not a valid mode, cannot specify --authorization-webhook-config-file without mode Webhook, ` +
		`invalid audit log format xml, allowed formats are "legacy,json", disable-admission-plugins plugin "Nope" is unknown]`
	if err == nil || err.Error() != want {
		t.Fatalf("error\n%v\nwant\n%s", err, want)
	}
	assertEmptyDir(t, dataDir)
}
