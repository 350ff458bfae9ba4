package pullrecords

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestUnknown: as upstream's PruneUnknownRecords, records of images not
// kept go if last updated before the collection began; those written
// since stay.
func TestUnknown(t *testing.T) {
	at := func(ref string, d time.Duration) *Record {
		return &Record{Kind: recordKind, APIVersion: recordAPIVersion, ImageRef: ref, LastUpdatedTime: t0.Add(d)}
	}
	records := map[string]*Record{
		"sha256:kept":  at("sha256:kept", -time.Hour),
		"sha256:gone":  at("sha256:gone", -time.Hour),
		"sha256:gone2": at("sha256:gone2", -time.Nanosecond),
		"sha256:new":   at("sha256:new", 0),
		"sha256:newer": at("sha256:newer", time.Minute),
	}
	got := Unknown(records, []string{"sha256:kept", "sha256:other"}, t0)
	if want := []string{"sha256:gone", "sha256:gone2"}; !slices.Equal(got, want) {
		t.Errorf("Unknown = %v, want %v", got, want)
	}
}

// TestPruneUnknownRecords: the records of images a collection removed are
// forgotten, their files removed; a kubelet started again has none of
// them, so the image pulled again is recorded afresh.
func TestPruneUnknownRecords(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "image_manager")
	a := Secret{UID: "ua", Namespace: "ns", Name: "a", CredentialHash: "ha"}
	s := open(t, dir)
	s.Pulled("reg.example/private:1", "sha256:11", Credentials{KubernetesSecrets: []Secret{a}})
	s.Pulled("reg.example/kept:1", "sha256:22", Credentials{KubernetesSecrets: []Secret{a}})
	s.PruneUnknownRecords([]string{"sha256:22"}, t0.Add(time.Second))
	if s.Record("sha256:11") != nil || s.Record("sha256:22") == nil {
		t.Fatalf("records after pruning: 11 %v, 22 %v; want only 22", s.Record("sha256:11"), s.Record("sha256:22"))
	}
	if _, err := os.Stat(filepath.Join(dir, pulledDir, fileName("sha256:11"))); !os.IsNotExist(err) {
		t.Errorf("the pruned record's file is left: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, pulledDir, fileName("sha256:22"))); err != nil {
		t.Errorf("the kept record's file: %v", err)
	}
	s2 := open(t, dir)
	if s2.Record("sha256:11") != nil || s2.Record("sha256:22") == nil {
		t.Errorf("records after a restart: 11 %v, 22 %v; want only 22", s2.Record("sha256:11"), s2.Record("sha256:22"))
	}
	// A record written at or after the collection's start stays.
	s2.Pulled("reg.example/private:1", "sha256:11", Credentials{})
	s2.PruneUnknownRecords(nil, t0)
	if s2.Record("sha256:11") == nil || s2.Record("sha256:22") == nil {
		t.Errorf("records written since the collection began were pruned")
	}
}
