package endpoints

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// readAll must return what io.ReadAll returns whatever the announced
// Content-Length says, however the reader splits the body.
func TestReadAllMatchesIOReadAll(t *testing.T) {
	body := strings.Repeat("0123456789", 130)
	for _, tc := range []struct {
		name          string
		body          string
		contentLength int64
	}{
		{"exact", body, int64(len(body))},
		{"unknown", body, -1},
		{"zero announced", body, 0},
		{"shorter than announced", body[:100], int64(len(body))},
		{"longer than announced", body, 10},
		{"empty", "", 0},
		{"empty but announced", "", 5},
	} {
		for _, split := range []struct {
			name string
			wrap func(io.Reader) io.Reader
		}{
			{"whole", func(r io.Reader) io.Reader { return r }},
			{"one byte", iotest.OneByteReader},
			{"half", iotest.HalfReader},
			{"data with EOF", iotest.DataErrReader},
		} {
			for _, sc := range []struct {
				name    string
				scratch []byte
			}{
				{"no scratch", nil},
				{"small scratch", make([]byte, 3, 10)},
				{"large scratch", bytes.Repeat([]byte("#"), 4096)},
			} {
				scratch := sc.scratch
				t.Run(tc.name+"/"+split.name+"/"+sc.name, func(t *testing.T) {
					want, wantErr := io.ReadAll(split.wrap(strings.NewReader(tc.body)))
					got, err := readAll(split.wrap(strings.NewReader(tc.body)), tc.contentLength, scratch)
					if err != nil || wantErr != nil {
						t.Fatalf("errors: readAll %v, io.ReadAll %v", err, wantErr)
					}
					if !bytes.Equal(got, want) {
						t.Fatalf("readAll read %d bytes %q..., want %d", len(got), got[:min(len(got), 20)], len(want))
					}
					// An announced body that fits is read into the scratch.
					fits := tc.contentLength > 0 && int64(cap(scratch)) > tc.contentLength && int64(len(tc.body)) <= tc.contentLength
					if fits && len(got) > 0 && &got[0] != &scratch[:1][0] {
						t.Fatal("the body fitted in the scratch buffer but was read elsewhere")
					}
				})
			}
		}
	}
}

func TestReadAllReturnsReadErrors(t *testing.T) {
	boom := errors.New("connection reset")
	r := io.MultiReader(strings.NewReader("partial"), iotest.ErrReader(boom))
	got, err := readAll(r, 100, nil)
	if !errors.Is(err, boom) {
		t.Fatalf("error %v, want %v", err, boom)
	}
	if string(got) != "partial" {
		t.Fatalf("read %q before the error, want %q", got, "partial")
	}
}
