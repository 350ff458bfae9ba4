package main

import (
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/kubeproof/kubeproof/impl/cluster"
)

// The webhook authorizer's and token authenticator's flags, under
// kube-apiserver's names and with its defaults, on `kubeproof apiserver`
// and `kubeproof up` (addAuthFlags). Both webhook versions default to
// v1beta1, as kube-apiserver's.
func TestAuthWebhookFlags(t *testing.T) {
	var o cluster.AuthOptions
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	addAuthFlags(fs, &o, cluster.DefaultAuthorizationModes, nil, nil)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if o.AuthorizationWebhookVersion != "v1beta1" || o.AuthorizationWebhookCacheAuthorizedTTL != 5*time.Minute ||
		o.AuthorizationWebhookCacheUnauthorizedTTL != 30*time.Second || o.AuthenticationTokenWebhookVersion != "v1beta1" ||
		o.AuthenticationTokenWebhookCacheTTL != 2*time.Minute {
		t.Errorf("defaults: %+v", o)
	}
	o = cluster.AuthOptions{}
	fs = pflag.NewFlagSet("test", pflag.ContinueOnError)
	addAuthFlags(fs, &o, cluster.DefaultAuthorizationModes, nil, nil)
	if err := fs.Parse([]string{"--authorization-mode=Webhook,RBAC", "--authorization-webhook-config-file=/authz.kubeconfig",
		"--authorization-webhook-version=v1beta1", "--authorization-webhook-cache-authorized-ttl=1m",
		"--authorization-webhook-cache-unauthorized-ttl=0", "--authentication-token-webhook-config-file=/authn.kubeconfig",
		"--authentication-token-webhook-version=v1beta1", "--authentication-token-webhook-cache-ttl=10s"}); err != nil {
		t.Fatal(err)
	}
	want := cluster.AuthOptions{AuthorizationModes: []string{"Webhook", "RBAC"}, AuthorizationWebhookConfigFile: "/authz.kubeconfig",
		AuthorizationWebhookVersion: "v1beta1", AuthorizationWebhookCacheAuthorizedTTL: time.Minute,
		AuthenticationTokenWebhookConfigFile: "/authn.kubeconfig", AuthenticationTokenWebhookVersion: "v1beta1",
		AuthenticationTokenWebhookCacheTTL: 10 * time.Second}
	got := o
	got.EnableAdmissionPlugins, got.DisableAdmissionPlugins = nil, nil
	if got.AuthorizationWebhookConfigFile != want.AuthorizationWebhookConfigFile || got.AuthorizationWebhookVersion != want.AuthorizationWebhookVersion ||
		got.AuthorizationWebhookCacheAuthorizedTTL != want.AuthorizationWebhookCacheAuthorizedTTL || got.AuthorizationWebhookCacheUnauthorizedTTL != 0 ||
		got.AuthenticationTokenWebhookConfigFile != want.AuthenticationTokenWebhookConfigFile ||
		got.AuthenticationTokenWebhookVersion != want.AuthenticationTokenWebhookVersion ||
		got.AuthenticationTokenWebhookCacheTTL != want.AuthenticationTokenWebhookCacheTTL ||
		len(got.AuthorizationModes) != 2 || got.AuthorizationModes[0] != "Webhook" {
		t.Errorf("parsed %+v", got)
	}
}
