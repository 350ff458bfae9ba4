package endpoints

import (
	"bytes"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
					got, err := readAll(split.wrap(strings.NewReader(tc.body)), tc.contentLength, 1<<20, scratch)
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
	got, err := readAll(r, 100, 1<<20, nil)
	if !errors.Is(err, boom) {
		t.Fatalf("error %v, want %v", err, boom)
	}
	if string(got) != "partial" {
		t.Fatalf("read %q before the error, want %q", got, "partial")
	}
}

// A body is refused with 413 beyond the limit whether its length is
// announced (within or beyond the limit, or shorter than the body, as a
// caller other than a server may give it) or unknown.
func TestReadBodyLimit(t *testing.T) {
	h := configMapHandler(t, acceptingStore{})
	h.opts.MaxBodyBytes = 64
	for _, tc := range []struct {
		name          string
		body          string
		contentLength int64
		tooLarge      bool
	}{
		{"announced, within", strings.Repeat("a", 64), 64, false},
		{"announced, beyond", strings.Repeat("a", 65), 65, true},
		{"announced short, body beyond", strings.Repeat("a", 65), 10, true},
		{"unknown, within", strings.Repeat("a", 64), -1, false},
		{"unknown, beyond", strings.Repeat("a", 65), -1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/api/v1/namespaces/ns/configmaps", strings.NewReader(tc.body))
			r.ContentLength = tc.contentLength
			got, err := h.readBodyInto(httptest.NewRecorder(), r, nil)
			if tc.tooLarge {
				if !apierrors.IsRequestEntityTooLargeError(err) {
					t.Fatalf("error %v, want 413", err)
				}
				return
			}
			if err != nil || string(got) != tc.body {
				t.Fatalf("read %q, %v; want the body", got, err)
			}
		})
	}
}

// A body of announced length is read into the scratch buffer with no
// allocation: the limit is readAll's, not a MaxBytesReader's.
func TestReadBodyOfAnnouncedLengthAllocatesNothing(t *testing.T) {
	h := configMapHandler(t, acceptingStore{})
	data := bytes.Repeat([]byte("a"), 1024)
	body := bytes.NewReader(data)
	r := httptest.NewRequest("POST", "/api/v1/namespaces/ns/configmaps", body)
	r.ContentLength = int64(len(data))
	w := httptest.NewRecorder()
	scratch := make([]byte, 0, 2048)
	read := func() {
		body.Reset(data)
		got, err := h.readBodyInto(w, r, scratch)
		if err != nil || len(got) != len(data) {
			t.Fatalf("read %d bytes, %v", len(got), err)
		}
	}
	if n := testing.AllocsPerRun(100, read); n != 0 {
		t.Errorf("reading a body of announced length allocates %v times, want 0", n)
	}
}
