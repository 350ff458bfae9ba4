package main

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"k8s.io/klog/v2"
)

// TestLoggerLeavesKlogsLoggerInPlace: setting up a command's logging does
// not replace klog's logger, which client-go reads at each request (a
// command run while an in-process cluster's clients log, as the
// commands' tests do, raced with them: TestKubeletRotatesCertificates
// under -race); klog still writes to the logger set up last.
func TestLoggerLeavesKlogsLoggerInPlace(t *testing.T) {
	defer slog.SetDefault(slog.Default())
	sink := klog.Background().GetSink()
	for _, o := range []logOptions{{level: "debug", format: "json"}, {level: "error", format: "text"}} {
		if _, err := o.logger(); err != nil {
			t.Fatal(err)
		}
		if got := klog.Background().GetSink(); got != sink {
			t.Fatalf("logOptions%+v.logger() replaced klog's logger", o)
		}
	}

	var buf bytes.Buffer
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn})))
	klog.Background().WithValues("component", "client-go").WithName("rest").Error(nil, "request failed")
	klog.Background().Info("not at warn")
	out := buf.String()
	if !strings.Contains(out, "request failed") || !strings.Contains(out, "component=client-go") || strings.Contains(out, "not at warn") {
		t.Errorf("klog wrote %q to the default logger; want the error with its values and not the info", out)
	}
}
