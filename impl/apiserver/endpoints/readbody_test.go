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
			t.Run(tc.name+"/"+split.name, func(t *testing.T) {
				want, wantErr := io.ReadAll(split.wrap(strings.NewReader(tc.body)))
				got, err := readAll(split.wrap(strings.NewReader(tc.body)), tc.contentLength)
				if err != nil || wantErr != nil {
					t.Fatalf("errors: readAll %v, io.ReadAll %v", err, wantErr)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("readAll read %d bytes %q..., want %d", len(got), got[:min(len(got), 20)], len(want))
				}
			})
		}
	}
}

func TestReadAllReturnsReadErrors(t *testing.T) {
	boom := errors.New("connection reset")
	r := io.MultiReader(strings.NewReader("partial"), iotest.ErrReader(boom))
	got, err := readAll(r, 100)
	if !errors.Is(err, boom) {
		t.Fatalf("error %v, want %v", err, boom)
	}
	if string(got) != "partial" {
		t.Fatalf("read %q before the error, want %q", got, "partial")
	}
}
