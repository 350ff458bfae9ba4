package admission

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// writeExecPlugin writes a shell script exec credential plugin that
// appends a line to runs each time it runs and prints the ExecCredential
// status (a JSON object) or, with status "", fails.
func writeExecPlugin(t *testing.T, status string) (plugin, runs string) {
	t.Helper()
	dir := t.TempDir()
	runs = filepath.Join(dir, "runs")
	plugin = filepath.Join(dir, "plugin.sh")
	body := "#!/bin/sh\necho run >> '" + runs + "'\n"
	if status == "" {
		body += "echo 'no credentials here' >&2\nexit 3\n"
	} else {
		body += "server=$(printf '%s' \"$KUBERNETES_EXEC_INFO\" | sed -n 's/.*\"server\":\"\\([^\"]*\\)\".*/\\1/p')\n" +
			"cat <<END\n{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":" + status + "}\nEND\n"
	}
	if err := os.WriteFile(plugin, []byte(body), 0o700); err != nil {
		t.Fatal(err)
	}
	return plugin, runs
}

func pluginRuns(t *testing.T, runs string) int {
	t.Helper()
	b, err := os.ReadFile(runs)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.Count(string(b), "run")
}

func execUser(plugin string, clusterInfo bool) map[string]any {
	return map[string]any{"exec": map[string]any{"apiVersion": "client.authentication.k8s.io/v1", "command": plugin,
		"interactiveMode": "Never", "provideClusterInfo": clusterInfo}}
}

// As kube-apiserver's webhook clients (client-go's exec authenticator), a
// kubeConfigFile user with an exec credential plugin is called with the
// token or client certificate the plugin prints, run once and its
// credential kept (it has no expiry); with provideClusterInfo the plugin
// is told the webhook's server.
func TestWebhookExecCredentialPlugin(t *testing.T) {
	servers := []*credServer{newCredServer(t), newCredServer(t), newCredServer(t)}
	host := func(i int) string { return strings.TrimPrefix(servers[i].URL, "https://") }
	certPEM, keyPEM := clientCertPEM(t, "from-exec-cert")
	certStatus, _ := json.Marshal(map[string]string{"clientCertificateData": string(certPEM), "clientKeyData": string(keyPEM)})
	tokenPlugin, tokenRuns := writeExecPlugin(t, `{"token":"from-exec"}`)
	certPlugin, _ := writeExecPlugin(t, string(certStatus))
	infoPlugin, _ := writeExecPlugin(t, `{"token":"server-$server"}`)
	creds, err := LoadWebhookCredentials(writeKubeconfig(t, map[string]map[string]any{
		host(0): execUser(tokenPlugin, false),
		host(1): execUser(certPlugin, false),
		host(2): execUser(infoPlugin, true),
	}, ""))
	if err != nil {
		t.Fatal(err)
	}
	validateWithCredentials(t, servers, creds, "Bearer from-exec agent kube-apiserver-admission",
		"cert:from-exec-cert agent kube-apiserver-admission",
		"Bearer server-https://"+host(2)+" agent kube-apiserver-admission")
	if n := pluginRuns(t, tokenRuns); n != 1 {
		t.Errorf("the token plugin ran %d times for one call, want 1", n)
	}
}

// A token, basic credentials or client certificate of the same user win
// over its exec plugin, which then never runs (client-go's exec
// authenticator steps aside for them).
func TestWebhookExecPluginUnusedBesideOtherCredentials(t *testing.T) {
	s := newCredServer(t)
	plugin, runs := writeExecPlugin(t, `{"token":"from-exec"}`)
	u := execUser(plugin, false)
	u["token"] = "static"
	creds, err := LoadWebhookCredentials(writeKubeconfig(t, map[string]map[string]any{strings.TrimPrefix(s.URL, "https://"): u}, ""))
	if err != nil {
		t.Fatal(err)
	}
	validateWithCredentials(t, []*credServer{s}, creds, "Bearer static agent kube-apiserver-admission")
	if n := pluginRuns(t, runs); n != 0 {
		t.Errorf("the plugin ran %d times, want 0", n)
	}
}

// A plugin that fails fails the call, as any other error calling the
// webhook: rejected under failurePolicy Fail, with the plugin's exit
// code in the message.
func TestWebhookExecPluginFailureFailsTheCall(t *testing.T) {
	s := newCredServer(t)
	plugin, runs := writeExecPlugin(t, "")
	creds, err := LoadWebhookCredentials(writeKubeconfig(t, map[string]map[string]any{strings.TrimPrefix(s.URL, "https://"): execUser(plugin, false)}, ""))
	if err != nil {
		t.Fatal(err)
	}
	for _, policy := range []admissionregistrationv1.FailurePolicyType{admissionregistrationv1.Fail, admissionregistrationv1.Ignore} {
		url := s.URL + "/check"
		none := admissionregistrationv1.SideEffectClassNone
		hook := admissionregistrationv1.ValidatingWebhook{Name: "h0.example.com", FailurePolicy: &policy, SideEffects: &none,
			Rules: podRules, AdmissionReviewVersions: []string{"v1"},
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})}}
		d := testDispatcher(validatingWebhooks([]admissionregistrationv1.ValidatingWebhookConfiguration{{ObjectMeta: metav1.ObjectMeta{Name: "v"}, Webhooks: []admissionregistrationv1.ValidatingWebhook{hook}}}))
		d.clients.credentials = creds
		err = (&ValidatingWebhook{d}).Validate(context.Background(), podCreate(newPod("p")))
		if policy == admissionregistrationv1.Ignore {
			if err != nil {
				t.Errorf("failurePolicy Ignore: %v, want allowed", err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), "exit code 3") || !strings.Contains(err.Error(), `failed calling webhook "h0.example.com"`) {
			t.Fatalf("got %v, want the call failed by the plugin's exit code 3", err)
		}
		t.Logf("failurePolicy Fail: %v", err)
	}
	if got := s.calls(); len(got) != 0 {
		t.Errorf("the webhook was called: %q", got)
	}
	if pluginRuns(t, runs) == 0 {
		t.Error("the plugin never ran")
	}
}
