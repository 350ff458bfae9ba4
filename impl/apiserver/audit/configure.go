package audit

import (
	"fmt"
	"log/slog"

	utilerrors "k8s.io/apimachinery/pkg/util/errors"
)

// ValidateOptions checks the log and webhook options as kube-apiserver's
// audit options validation: every error of both, reported together (one
// error as it is, several as "[first, second]", an aggregate).
func ValidateOptions(logOpts LogOptions, webhookOpts WebhookOptions) error {
	return utilerrors.NewAggregate(append(logOpts.Validate(), webhookOpts.Validate()...))
}

// Configure is kube-apiserver's audit set-up from its flags: the options
// are validated (all errors together), the policy file, when given, is
// loaded, and the backends are built only when there is a policy. A
// backend without a policy is not an error: the log file is still
// created, as kube-apiserver's, and log says that no events will be
// recorded for that backend; the result records nothing (nil policy and
// backend). A policy without a backend is loaded (a bad file is an
// error) and records nothing either (nil backend). Close the backend
// (see NewBackends) on shutdown.
func Configure(policyFile string, logOpts LogOptions, webhookOpts WebhookOptions, m *Metrics, log *slog.Logger) (*Policy, Backend, error) {
	logOpts, webhookOpts = logOpts.withDefaults(), webhookOpts.withDefaults()
	if err := ValidateOptions(logOpts, webhookOpts); err != nil {
		return nil, nil, err
	}
	if policyFile == "" {
		if logOpts.Path != "" {
			if logOpts.Path != "-" {
				if err := ensureLogFile(logOpts.Path); err != nil {
					return nil, nil, fmt.Errorf("ensureLogFile: %w", err)
				}
			}
			log.Info("No audit policy file provided, no events will be recorded for log backend")
		}
		if webhookOpts.ConfigFile != "" {
			log.Info("No audit policy file provided, no events will be recorded for webhook backend")
		}
		return nil, nil, nil
	}
	policy, lenient, err := loadPolicy(policyFile)
	if err != nil {
		return nil, nil, fmt.Errorf("loading audit policy file: %w", err)
	}
	if lenient != nil {
		log.Warn(fmt.Sprintf("Audit policy contains errors, falling back to lenient decoding: %v", lenient))
	}
	backend, err := NewBackends(logOpts, webhookOpts, m)
	if err != nil {
		return nil, nil, err
	}
	return policy, backend, nil
}
