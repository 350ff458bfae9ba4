package cluster

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/kubeproof/kubeproof/impl/apiserver/admission"
)

// upstreamAuthorizationModes are kube-apiserver's --authorization-mode
// values; ABAC is one kubeproof does not have.
var upstreamAuthorizationModes = []string{"AlwaysAllow", "AlwaysDeny", "ABAC", "Webhook", "RBAC", "Node"}

// Validate returns every error kube-apiserver's option validation finds in
// the request chain's flags, in its order (authentication, authorization,
// audit, admission) and words; report them together
// (utilerrors.NewAggregate), as kube-apiserver does. It reads no file:
// the files the flags name are read when the chain is built, after
// validation, as kube-apiserver reads the authorization webhook's
// kubeconfig, the audit policy, the token file and the admission
// configuration. kube-apiserver reads --service-account-signing-key-file
// (with an issuer) and writes its self-signed serving certificate while
// completing its options, before validating them; kubeproof does both
// after.
func (o AuthOptions) Validate() []error {
	return o.validate(false)
}

// ValidateForStart is Validate for the options of Start (`kubeproof
// up`), which signs service account tokens with a key of its own when
// none is given: there, issuers without a key file have a key.
func (o AuthOptions) ValidateForStart() []error {
	return o.validate(true)
}

// validate is Validate; ownKey says a signing key is generated when no
// key is given.
func (o AuthOptions) validate(ownKey bool) []error {
	var errs []error
	errs = append(errs, o.validateAuthentication(ownKey)...)
	errs = append(errs, o.validateAuthorization()...)
	logOpts := o.AuditLog
	logOpts.Path = o.AuditLogPath
	errs = append(errs, logOpts.Validate()...)
	errs = append(errs, o.AuditWebhook.Validate()...)
	errs = append(errs, admission.ValidatePluginFlags(o.EnableAdmissionPlugins, o.DisableAdmissionPlugins)...)
	return errs
}

// validateAuthentication checks the --service-account-issuer values as
// kube-apiserver (each a URL when it has a colon, none empty, none twice),
// then kubeproof's own rule: issuers need a key to sign or verify tokens
// (kube-apiserver requires --service-account-key-file outright; kubeproof
// runs without service account tokens when no key is given, and ownKey
// says one is generated then).
func (o AuthOptions) validateAuthentication(ownKey bool) []error {
	var errs []error
	seen := map[string]bool{}
	for _, iss := range o.ServiceAccountIssuers {
		if strings.Contains(iss, ":") {
			if _, err := url.Parse(iss); err != nil {
				errs = append(errs, fmt.Errorf("service-account-issuer %q contained a ':' but was not a valid URL: %v", iss, err))
				continue
			}
		}
		switch {
		case iss == "":
			errs = append(errs, errors.New("service-account-issuer should not be an empty string"))
		case seen[iss]:
			errs = append(errs, fmt.Errorf("service-account-issuer %q is already specified", iss))
		default:
			seen[iss] = true
		}
	}
	if len(o.ServiceAccountIssuers) > 0 && !ownKey && o.ServiceAccountSigningKeyFile == "" && o.ServiceAccountSigningKey == nil && len(o.ServiceAccountKeyFiles) == 0 {
		errs = append(errs, errors.New("--service-account-issuer needs --service-account-signing-key-file or --service-account-key-file"))
	}
	// kube-apiserver checks this while completing its options, before it
	// validates them (kubeproof reports it with the others).
	if max := o.ServiceAccountMaxTokenExpiration; max != 0 && (max < time.Hour || max > (1<<32)*time.Second) {
		errs = append(errs, errors.New("the service-account-max-token-expiration must be between 1 hour and 2^32 seconds"))
	}
	return errs
}

// validateAuthorization checks --authorization-mode and the Webhook
// mode's config file as kube-apiserver: each mode in order (valid; Webhook
// with its file), then a file without the Webhook mode, then modes given
// more than once. No modes (AuthOptions' zero value: the flag left out)
// is kubeproof's default (Node,RBAC), not an error; in kube-apiserver it
// is not an error either, but AlwaysAllow (its options' completion sets
// that mode when no --authorization-mode and no --authorization-config is
// given, before validation, so its "at least one authorization-mode must
// be passed" is never reached). `kubeproof apiserver` does the same with
// an explicitly empty flag (completeAuthorizationModes) before this. ABAC, valid
// in kube-apiserver, is refused in kubeproof's words.
func (o AuthOptions) validateAuthorization() []error {
	modes := o.AuthorizationModes
	if len(modes) == 0 {
		modes = DefaultAuthorizationModes
	}
	var errs []error
	distinct := map[string]bool{}
	for _, m := range modes {
		distinct[m] = true
		switch {
		case !slices.Contains(upstreamAuthorizationModes, m):
			errs = append(errs, fmt.Errorf("authorization-mode %q is not a valid mode", m))
		case !slices.Contains(AuthorizationModes, m):
			errs = append(errs, fmt.Errorf("authorization-mode %q is not one kubeproof has (it has %s)", m, strings.Join(AuthorizationModes, ", ")))
		case m == "Webhook" && o.AuthorizationWebhookConfigFile == "":
			errs = append(errs, errors.New("authorization-mode Webhook's authorization config file not passed"))
		}
	}
	if o.AuthorizationWebhookConfigFile != "" && !distinct["Webhook"] {
		errs = append(errs, errors.New("cannot specify --authorization-webhook-config-file without mode Webhook"))
	}
	if len(distinct) != len(modes) {
		errs = append(errs, fmt.Errorf("authorization-mode %q has mode specified more than once", modes))
	}
	return errs
}
