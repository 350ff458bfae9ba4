package endpoints

import (
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// Warnings are capped as kube-apiserver's warning recorder caps them
// (found by FuzzWebhook, whose webhooks warn up to 8 KiB): while their
// text together is at most 4,096 runes each is sent whole; beyond, each is
// cut to 256 runes. Text that is not UTF-8 is dropped.
func TestWarningsTruncated(t *testing.T) {
	for _, tc := range []struct {
		name     string
		warnings []string
		want     []string
	}{
		{"small", []string{"a", "b"}, []string{"a", "b"}},
		{"4096 runes together", []string{strings.Repeat("é", 4000), strings.Repeat("x", 96)}, []string{strings.Repeat("é", 4000), strings.Repeat("x", 96)}},
		{"one rune more", []string{strings.Repeat("é", 4000), strings.Repeat("x", 97), "short"},
			[]string{strings.Repeat("é", 256), strings.Repeat("x", 97), "short"}},
		{"not UTF-8", []string{"ok", "bad \xff"}, []string{"ok"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			addWarnings(rec, tc.warnings)
			got := rec.Header().Values("Warning")
			if len(got) != len(tc.want) {
				t.Fatalf("%d headers, want %d", len(got), len(tc.want))
			}
			for i, h := range got {
				text, err := strconv.Unquote(strings.TrimPrefix(h, "299 - "))
				if err != nil || text != tc.want[i] {
					t.Fatalf("header %d: %d runes (%v), want %d", i, utf8.RuneCountInString(text), err, utf8.RuneCountInString(tc.want[i]))
				}
			}
		})
	}
}
