package main

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// FuzzKubeletConfig feeds `kubeproof kubelet --config FILE` (and
// --config-dir) random and mutated KubeletConfiguration documents: the
// fuzzer's bytes as the whole file, after the apiVersion/kind header, as
// the value of one field kubeproof implements (kubeletConfigFields) or of
// one it only warns about or refuses (kubeletConfigFuzzKeys), as a drop-in
// over a valid file, or with the command line setting the same flag. Every
// document must give an error or a configuration, never a panic or a hang
// (kubeletConfigFuzzTimeout), and an accepted one must be accepted again,
// with the same flags, when its effective flags are validated as a kubelet
// without --config validates them.
func FuzzKubeletConfig(f *testing.F) {
	values := []string{"", "0", "-1", "1", "2147483648", "-9223372036854775809", "1e400", "0.5", "true", "null",
		"[]", "{}", `""`, `"x"`, `"-1s"`, `"1h"`, `"99999999999h"`, "[1, null]", `{"a": "<1"}`, `{"": ""}`, "~", "&a [*a]"}
	for i := range kubeletConfigFields {
		for j, v := range values {
			if (i+j)%5 == 0 {
				f.Add(byte(2), byte(i), []byte(v))
			}
		}
	}
	for i := range kubeletConfigFuzzKeys {
		f.Add(byte(3), byte(i), []byte("-1"))
	}
	f.Add(byte(0), byte(0), []byte(kcHeader))
	f.Add(byte(0), byte(0), []byte("{}"))
	f.Add(byte(1), byte(0), []byte("evictionHard:\n  memory.available: \"<1\"\n  imagefs.available: 101%\n"))
	f.Add(byte(1), byte(0), []byte("featureGates:\n  Foo: true\nmaxPods: -3\n"))
	f.Add(byte(4), byte(0), []byte("maxPods: null\nevictionHard: null\n"))
	f.Add(byte(4), byte(0), []byte("apiVersion: v1\nkind: Pod\n"))
	f.Add(byte(5), byte(7), []byte("x"))
	f.Fuzz(func(t *testing.T, mode, field byte, data []byte) {
		base := kcHeader
		var file, dropIn string
		var args []string
		switch mode % 6 {
		case 0: // the bytes are the file
			file = string(data)
		case 1: // a document of the right kind
			file = kcHeader + string(data)
		case 2: // one implemented field's value
			f := kubeletConfigFields[int(field)%len(kubeletConfigFields)]
			file = kcHeader + yamlAtPath(f.path, string(data))
		case 3: // a field kubeproof does not implement
			file = kcHeader + yamlAtPath(kubeletConfigFuzzKeys[int(field)%len(kubeletConfigFuzzKeys)], string(data))
		case 4: // a drop-in over a valid file
			file, dropIn = base, kcHeader+string(data)
		case 5: // the command line over the file's value
			f := kubeletConfigFields[int(field)%len(kubeletConfigFields)]
			file = kcHeader + yamlAtPath(f.path, string(data))
			args = []string{"--" + f.flag + "=" + string(data)}
		}
		err := applyKubeletConfigBounded(t, file, dropIn, args)
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("refused with an empty error")
			}
			return
		}
		// The configuration accepted is the one the kubelet runs with: its
		// flags must validate as a kubelet's own flags do.
		cmd := newKubeletCommand()
		if perr := cmd.Flags().Parse(args); perr != nil {
			t.Fatalf("command line %q parsed once, not twice: %v", args, perr)
		}
		path := filepath.Join(t.TempDir(), "config.yaml")
		if werr := os.WriteFile(path, []byte(file), 0o600); werr != nil {
			t.Fatal(werr)
		}
		dir := ""
		if dropIn != "" {
			dir = t.TempDir()
			if werr := os.WriteFile(filepath.Join(dir, "10-fuzz.conf"), []byte(dropIn), 0o600); werr != nil {
				t.Fatal(werr)
			}
		}
		if _, err := useKubeletConfigFile(cmd.Flags(), path, dir, slog.New(slog.DiscardHandler)); err != nil {
			t.Fatalf("accepted once, refused the second time: %v", err)
		}
		if err := validateFlagsKubeletConfig(cmd.Flags()); err != nil {
			t.Fatalf("configuration accepted, its flags refused: %v\nfile:\n%s\ndrop-in:\n%s\nargs: %q", err, file, dropIn, args)
		}
	})
}

// kubeletConfigFuzzKeys are KubeletConfiguration fields kubeproof does not
// implement (warned about or refused) and nested members of implemented
// ones, for FuzzKubeletConfig's single-field documents.
var kubeletConfigFuzzKeys = []string{
	"authentication.webhook.cacheTTL", "authorization.webhook.cacheAuthorizedTTL", "fileCheckFrequency",
	"staticPodURL", "staticPodURLHeader", "readOnlyPort", "healthzPort", "cpuManagerPolicy", "cpuManagerPolicyOptions",
	"topologyManagerPolicy", "memoryManagerPolicy", "reservedMemory", "reservedSystemCPUs", "systemReserved",
	"kubeReserved", "enforceNodeAllocatable", "evictionSoft", "evictionSoftGracePeriod", "evictionMinimumReclaim",
	"evictionPressureTransitionPeriod", "imageGCHighThresholdPercent", "imageGCLowThresholdPercent", "imageMinimumGCAge",
	"imageMaximumGCAge", "containerLogMaxSize", "containerLogMaxFiles", "logging.format", "logging.verbosity",
	"logging.options.json.infoBufferSize", "shutdownGracePeriod", "shutdownGracePeriodByPodPriority", "tlsCipherSuites",
	"tlsMinVersion", "allowedUnsafeSysctls", "registerWithTaints", "memorySwap.swapBehavior", "podPidsLimit",
	"crashLoopBackOff.maxContainerRestartPeriod", "mergeDefaultEvictionSettings", "apiVersion", "kind",
}

// kubeletConfigFuzzTimeout bounds one document's decoding, merging and
// validation: longer is a hang.
const kubeletConfigFuzzTimeout = 20 * time.Second

// applyKubeletConfigBounded writes file (and dropIn, when set, into a
// --config-dir) and applies them to a fresh `kubeproof kubelet` command
// line parsed from args; a panic is a failure, as is not returning within
// kubeletConfigFuzzTimeout. A command line that does not parse is no
// configuration and returns nil.
func applyKubeletConfigBounded(t *testing.T, file, dropIn string, args []string) error {
	t.Helper()
	cmd := newKubeletCommand()
	if err := cmd.Flags().Parse(args); err != nil {
		return fmt.Errorf("command line: %w", err)
	}
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := ""
	if dropIn != "" {
		dir = t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "10-fuzz.conf"), []byte(dropIn), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	type result struct {
		err   error
		panic any
	}
	done := make(chan result, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- result{panic: p}
			}
		}()
		_, err := useKubeletConfigFile(cmd.Flags(), path, dir, slog.New(slog.DiscardHandler))
		done <- result{err: err}
	}()
	select {
	case r := <-done:
		if r.panic != nil {
			t.Fatalf("panic applying the configuration: %v\nfile:\n%s\ndrop-in:\n%s\nargs: %q", r.panic, file, dropIn, args)
		}
		return r.err
	case <-time.After(kubeletConfigFuzzTimeout):
		t.Fatalf("applying the configuration did not return in %v\nfile:\n%s\ndrop-in:\n%s", kubeletConfigFuzzTimeout, file, dropIn)
		return nil
	}
}

// yamlAtPath is a YAML document setting the dotted path to value, written
// as it is on the path's last line.
func yamlAtPath(path, value string) string {
	var b bytes.Buffer
	for i, key := range strings.Split(path, ".") {
		b.WriteString(strings.Repeat("  ", i))
		b.WriteString(key)
		b.WriteString(":")
		if i < strings.Count(path, ".") {
			b.WriteString("\n")
		}
	}
	b.WriteString(" ")
	b.WriteString(value)
	b.WriteString("\n")
	return b.String()
}
