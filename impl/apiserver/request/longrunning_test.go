package request

import (
	"net/http/httptest"
	"testing"
)

func TestStreamingSubresourcesAreLongRunning(t *testing.T) {
	for _, tc := range []struct {
		method, path string
		want         bool
	}{
		{"GET", "/api/v1/namespaces/ns/pods/p/log?follow=true", true},
		{"POST", "/api/v1/namespaces/ns/pods/p/exec?command=ls", true},
		{"GET", "/api/v1/namespaces/ns/pods/p/exec?command=ls", true},
		{"GET", "/api/v1/nodes/n/proxy/metrics", true},
		{"GET", "/api/v1/namespaces/ns/pods/p/status", false},
		{"GET", "/api/v1/namespaces/ns/pods/p", false},
		{"GET", "/api/v1/pods?watch=true", true},
	} {
		if got := Parse(httptest.NewRequest(tc.method, tc.path, nil)).IsLongRunning(); got != tc.want {
			t.Errorf("%s %s: long-running %v, want %v", tc.method, tc.path, got, tc.want)
		}
	}
}
