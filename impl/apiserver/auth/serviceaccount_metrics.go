package auth

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubeproof/kubeproof/impl/internal/stability"
)

// ServiceAccountMetrics are kube-apiserver's counters of legacy
// (secret-based) service account token use, named as kube-apiserver's
// (subsystem serviceaccount): every legacy token with a valid signature;
// of those the secret lookup accepted, the auto-generated (listed in their
// account's .secrets) and the manual ones; and the refused ones whose
// secret is labelled invalid-since. And of accepted bound tokens with a
// warnafter claim (extended tokens), the stale ones (used after warnafter)
// and the valid ones.
type ServiceAccountMetrics struct {
	legacyTokens, autoTokens, manualTokens, invalidAutoTokens prometheus.Counter
	staleTokens, validTokens                                  prometheus.Counter
}

// NewServiceAccountMetrics registers the counters on reg. All are ALPHA
// upstream, which their help texts say as component-base writes it.
func NewServiceAccountMetrics(reg prometheus.Registerer) (*ServiceAccountMetrics, error) {
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Subsystem: "serviceaccount", Name: name, Help: stability.Alpha.Help(help)})
	}
	m := &ServiceAccountMetrics{
		legacyTokens:      counter("legacy_tokens_total", "Cumulative legacy service account tokens used"),
		autoTokens:        counter("legacy_auto_token_uses_total", "Cumulative auto-generated legacy tokens used"),
		manualTokens:      counter("legacy_manual_token_uses_total", "Cumulative manually created legacy tokens used"),
		invalidAutoTokens: counter("invalid_legacy_auto_token_uses_total", "Cumulative invalid auto-generated legacy tokens used"),
		staleTokens:       counter("stale_tokens_total", "Cumulative stale projected service account tokens used"),
		validTokens:       counter("valid_tokens_total", "Cumulative valid projected service account tokens used"),
	}
	for _, c := range []prometheus.Counter{m.legacyTokens, m.autoTokens, m.manualTokens, m.invalidAutoTokens, m.staleTokens, m.validTokens} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// The counting methods; a nil m counts nothing.

func (m *ServiceAccountMetrics) legacyTokenUsed() {
	if m != nil {
		m.legacyTokens.Inc()
	}
}

func (m *ServiceAccountMetrics) autoTokenUsed() {
	if m != nil {
		m.autoTokens.Inc()
	}
}

func (m *ServiceAccountMetrics) manualTokenUsed() {
	if m != nil {
		m.manualTokens.Inc()
	}
}

func (m *ServiceAccountMetrics) invalidAutoTokenUsed() {
	if m != nil {
		m.invalidAutoTokens.Inc()
	}
}

// extendedTokenUsed counts an accepted token with a warnafter claim.
func (m *ServiceAccountMetrics) extendedTokenUsed(stale bool) {
	switch {
	case m == nil:
	case stale:
		m.staleTokens.Inc()
	default:
		m.validTokens.Inc()
	}
}
