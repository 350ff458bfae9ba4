package pullrecords

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Store keeps the records (by image reference) and the pulls under way
// (by image as the pod names it), in memory and, when it has a directory,
// in files there as upstream's kubelet does under <root>/image_manager:
// pulled/ holds one record per image reference, pulling/ one intent per
// image being pulled with credentials, each named "sha256-" and the hex
// SHA-256 of the reference or image. An intent left by a kubelet that
// stopped mid-pull marks that image as pulled by the kubelet (verified)
// until a pull of it finishes; upstream turns it into a record without
// credentials at start, to the same effect. Pulls without credentials
// write no intent file (a pull that any pod may make proves nothing to
// verify), so the common pull costs no file until its record is written,
// once per image. Records are never modified in place (Merge copies), so
// a record read under the lock may be used after it.
type Store struct {
	dir string // "": memory only
	now func() time.Time
	log *slog.Logger

	mu       sync.Mutex
	repos    map[string]string  // image -> Repository(image) ("" if it does not parse), a cache
	records  map[string]*Record // by image reference
	inFlight map[string]int     // image -> pulls under way
	leftover map[string]bool    // images whose intent a previous kubelet left
	written  map[string]bool    // images whose intent file this store wrote and has not removed
}

// Open returns the store kept in dir (created if missing; "" keeps
// records in memory only), with the records and intents found there.
// Unreadable files are logged and skipped.
func Open(dir string, now func() time.Time, log *slog.Logger) (*Store, error) {
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Store{dir: dir, now: now, log: log, repos: map[string]string{}, records: map[string]*Record{}, inFlight: map[string]int{}, leftover: map[string]bool{}, written: map[string]bool{}}
	if dir == "" {
		return s, nil
	}
	for _, sub := range []string{pulledDir, pullingDir} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
			return nil, fmt.Errorf("creating the image pull records directory: %w", err)
		}
	}
	err := eachFile(filepath.Join(dir, pulledDir), func(path string, data []byte) error {
		var r Record
		if err := json.Unmarshal(data, &r); err != nil || r.Kind != recordKind || r.ImageRef == "" {
			return fmt.Errorf("reading image pulled record %s: not a record (%v)", path, err)
		}
		s.records[r.ImageRef] = &r
		return nil
	})
	if err != nil {
		log.Error("some image pulled records could not be read", "err", err)
	}
	err = eachFile(filepath.Join(dir, pullingDir), func(path string, data []byte) error {
		var in intent
		if err := json.Unmarshal(data, &in); err != nil || in.Image == "" {
			return fmt.Errorf("reading image pull intent %s: not an intent (%v)", path, err)
		}
		s.leftover[in.Image] = true
		return nil
	})
	if err != nil {
		log.Error("some image pull intents could not be read", "err", err)
	}
	return s, nil
}

const (
	pulledDir  = "pulled"
	pullingDir = "pulling"
	filePrefix = "sha256-"
	tmpSuffix  = ".tmp"
)

// intent is a pull under way, as upstream's ImagePullIntent.
type intent struct {
	Kind       string `json:"kind"`
	APIVersion string `json:"apiVersion"`
	Image      string `json:"image"`
}

func fileName(key string) string {
	sum := sha256.Sum256([]byte(key))
	return filePrefix + hex.EncodeToString(sum[:])
}

// MustPull is MustPull with image's record and pulls under way; a Learned
// secret is recorded. imageRef is the present image's reference ("": not
// present, a pull).
func (s *Store) MustPull(policy Policy, allowlist []string, image, imageRef string, podCreds func() (PodCredentials, error)) (bool, error) {
	if imageRef == "" {
		return true, nil
	}
	s.mu.Lock()
	rec := s.records[imageRef]
	pulling := s.inFlight[image] > 0 || (len(s.leftover) > 0 && s.leftover[image])
	var repo string
	if rec != nil || policy == NeverVerifyAllowlistedImages {
		repo = s.repository(image)
	}
	s.mu.Unlock()
	v, err := MustPull(policy, allowlist, repo, rec, pulling, podCreds)
	if v.Learned != nil {
		s.RecordPulled(image, imageRef, Credentials{KubernetesSecrets: []Secret{*v.Learned}})
	}
	return v.Pull, err
}

// repository is Repository(image), "" if it does not parse, from the
// cache (kept to the images of records: a node has few); s.mu held.
func (s *Store) repository(image string) string {
	if repo, ok := s.repos[image]; ok {
		return repo
	}
	repo, _ := Repository(image)
	s.repos[image] = repo
	return repo
}

// PullStarted notes a pull of image under way; withCredentials: with a
// pod's credentials, which writes an intent file (a kubelet stopped before
// the pull ends leaves the image verified).
func (s *Store) PullStarted(image string, withCredentials bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if withCredentials && s.dir != "" {
		data, err := json.Marshal(intent{Kind: "ImagePullIntent", APIVersion: recordAPIVersion, Image: image})
		if err != nil {
			return fmt.Errorf("recording the pull intent of %s: %w", image, err)
		}
		if err := writeFile(filepath.Join(s.dir, pullingDir), fileName(image), data); err != nil {
			return fmt.Errorf("recording the pull intent of %s: %w", image, err)
		}
		s.written[image] = true
	}
	s.inFlight[image]++
	return nil
}

// PullFailed ends a pull of image that failed.
func (s *Store) PullFailed(image string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pullEnded(image)
}

// Pulled ends a pull of image that gave imageRef with creds (empty: a pull
// with none of a pod's credentials, NodePodsAccessible; a pull with a
// pod's secret or service account is recorded as such) and records it.
func (s *Store) Pulled(image, imageRef string, creds Credentials) {
	if creds.empty() {
		creds.NodePodsAccessible = true
	}
	s.RecordPulled(image, imageRef, creds)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pullEnded(image)
}

// pullEnded: s.mu held.
func (s *Store) pullEnded(image string) {
	if n := s.inFlight[image]; n > 1 {
		s.inFlight[image] = n - 1
		return
	}
	delete(s.inFlight, image)
	if !s.written[image] && !s.leftover[image] {
		return // no intent file (the common pull, without credentials)
	}
	// The last pull of image ended: no intent file is left for it (one
	// written by a pull or left by a previous kubelet).
	if err := os.Remove(filepath.Join(s.dir, pullingDir, fileName(image))); err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.log.Error("unable to remove an image pull intent", "image", image, "err", err)
		return
	}
	delete(s.written, image)
	delete(s.leftover, image)
}

// RecordPulled merges creds into imageRef's record for image's repository
// and writes it if it changed. A failed write is logged: the record is
// kept in memory.
func (s *Store) RecordPulled(image, imageRef string, creds Credentials) {
	if imageRef == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	repo := s.repository(image)
	if repo == "" {
		return
	}
	rec, changed := Merge(s.records[imageRef], imageRef, repo, creds, s.now())
	if !changed {
		return
	}
	s.records[imageRef] = rec
	if s.dir == "" {
		return
	}
	data, err := json.Marshal(rec)
	if err == nil {
		err = writeFile(filepath.Join(s.dir, pulledDir), fileName(imageRef), data)
	}
	if err != nil {
		s.log.Error("unable to write an image pulled record", "imageRef", imageRef, "err", err)
	}
}

// PruneUnknownRecords forgets, after an image garbage collection that
// began at until, every record Unknown picks among those not in keep (the
// images the collection's freeSpace left: see gc.PostGCHook), in memory
// and on disk, as upstream's PullManager.PruneUnknownRecords (its image
// GC's post GC hook); pull intents stay. A file that cannot be removed is
// logged; the record is forgotten in memory all the same.
func (s *Store) PruneUnknownRecords(keep []string, until time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ref := range Unknown(s.records, keep, until) {
		delete(s.records, ref)
		if s.dir == "" {
			continue
		}
		if err := os.Remove(filepath.Join(s.dir, pulledDir, fileName(ref))); err != nil && !errors.Is(err, fs.ErrNotExist) {
			s.log.Error("failed to remove an image pulled record", "imageRef", ref, "err", err)
		}
	}
}

// Record returns imageRef's record (nil: none); it must not be modified.
func (s *Store) Record(imageRef string) *Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.records[imageRef]
}

// writeFile writes data to dir/name through a temporary file renamed in
// place, so that a reader never sees half a file.
func writeFile(dir, name string, data []byte) error {
	path := filepath.Join(dir, name)
	tmp := path + tmpSuffix
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("renaming %s: %w", tmp, err)
	}
	return nil
}

// eachFile calls f with each record file of dir (temporary files and
// files of other names skipped), returning every error met.
func eachFile(dir string, f func(path string, data []byte) error) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("listing %s: %w", dir, err)
	}
	var errs []error
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasPrefix(name, filePrefix) || strings.HasSuffix(name, tmpSuffix) {
			continue
		}
		path := filepath.Join(dir, name)
		data, err := os.ReadFile(path)
		if err != nil {
			errs = append(errs, fmt.Errorf("reading %s: %w", path, err))
			continue
		}
		if err := f(path, data); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
