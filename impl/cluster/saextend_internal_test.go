package cluster

import (
	"slices"
	"testing"
	"time"
)

// TestExtendTokenExpirationWarnings: as kube-apiserver at start, with
// --service-account-extend-token-expiration (the default) and a
// --service-account-max-token-expiration, a max below 3607 s is warned of
// (kubelets' requests are shortened, so never extended) and so is a max
// below one year (extended tokens outlive it); none without a max or with
// the extension off.
func TestExtendTokenExpirationWarnings(t *testing.T) {
	const below = "service-account-extend-token-expiration is true, in order to correctly trigger safe transition logic, service-account-max-token-expiration must be set longer than 3607 seconds (currently 1h0m0s)"
	for _, tc := range []struct {
		max      time.Duration
		noExtend bool
		want     []string
	}{
		{0, false, nil},
		{time.Hour, false, []string{below,
			"service-account-extend-token-expiration is true, enabling tokens valid up to 31536000 seconds, which is longer than service-account-max-token-expiration set to 1h0m0s"}},
		{2 * time.Hour, false, []string{
			"service-account-extend-token-expiration is true, enabling tokens valid up to 31536000 seconds, which is longer than service-account-max-token-expiration set to 2h0m0s"}},
		{2 * 365 * 24 * time.Hour, false, nil},
		{time.Hour, true, nil},
	} {
		got := extendTokenExpirationWarnings(AuthOptions{ServiceAccountMaxTokenExpiration: tc.max, NoServiceAccountExtendTokenExpiration: tc.noExtend})
		if !slices.Equal(got, tc.want) {
			t.Errorf("max %v, extension off %v: warnings %q, want %q", tc.max, tc.noExtend, got, tc.want)
		}
	}
}

// TestMaxTokenExpirationRange: --service-account-max-token-expiration, when
// given, must be between one hour and 2^32 seconds, as kube-apiserver
// refuses to start otherwise.
func TestMaxTokenExpirationRange(t *testing.T) {
	const msg = "the service-account-max-token-expiration must be between 1 hour and 2^32 seconds"
	for _, tc := range []struct {
		max time.Duration
		bad bool
	}{
		{0, false},
		{time.Hour, false},
		{time.Hour - time.Second, true},
		{time.Minute, true},
		{(1 << 32) * time.Second, false},
		{(1<<32)*time.Second + time.Second, true},
		{-time.Hour, true},
	} {
		var found bool
		for _, err := range (AuthOptions{ServiceAccountMaxTokenExpiration: tc.max}).Validate() {
			found = found || err.Error() == msg
		}
		if found != tc.bad {
			t.Errorf("max %v: refused %v, want %v", tc.max, found, tc.bad)
		}
	}
}
