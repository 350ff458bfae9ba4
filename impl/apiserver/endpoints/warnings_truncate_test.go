package endpoints

import (
	"net/http/httptest"
	"slices"
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

// Past the cap, kube-apiserver's recorder keeps adding (cut) warnings only
// while the runes it has written are under 4,096: with 20 warnings of 300
// runes the 14th starts the cutting, the 16th brings the total to 4,096
// and the last four are left out. A warning with a control character is
// dropped (net.NewWarningHeader refuses it), and the text is quoted as
// kube-apiserver quotes it: only '"' and '\' are escaped, so client-go's
// parser, which unescapes any character after '\', reads back the text
// (strconv.Quote's \u200b would read as "u200b").
func TestWarningsAsKubeAPIServerWritesThem(t *testing.T) {
	many := make([]string, 20)
	for i := range many {
		many[i] = strings.Repeat(string(rune('a'+i)), 300)
	}
	rec := httptest.NewRecorder()
	addWarnings(rec, many)
	got := rec.Header().Values("Warning")
	if len(got) != 16 {
		t.Errorf("20 warnings of 300 runes: %d headers, want 16", len(got))
	}
	for i, h := range got {
		if want := `299 - "` + strings.Repeat(string(rune('a'+i)), 256) + `"`; h != want {
			t.Errorf("header %d: %.20q..., want %d runes of %c", i, h, 256, rune('a'+i))
		}
	}

	rec = httptest.NewRecorder()
	addWarnings(rec, []string{"line\nbreak", "tab\there", "del\x7f", "c1\u0085", `say "hi" \ ok`, "zero\u200bwidth"})
	want := []string{`299 - "say \"hi\" \\ ok"`, "299 - \"zero\u200bwidth\""}
	if got := rec.Header().Values("Warning"); !slices.Equal(got, want) {
		t.Errorf("Warning headers %q, want %q", got, want)
	}
}
