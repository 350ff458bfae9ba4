package checker

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/kubeproof/kubeproof/model"
)

// TestFPSetBytesPerState inserts random fingerprints through the real
// insert path, from two goroutines as the workers do, and checks the
// memory the set reports per state (issue 3: at most 16 bytes), that every
// fingerprint is found again under its id, and that the parents and goals
// read back are the ones inserted.
func TestFPSetBytesPerState(t *testing.T) {
	for _, n := range []int{200_000, 1_000_000, 2_000_000} {
		set := newFPSet()
		rng := rand.New(rand.NewPCG(uint64(n), 7))
		fps := make([]uint64, n)
		for i := range fps {
			for fps[i] == 0 {
				fps[i] = rng.Uint64()
			}
		}
		ids := make([]uint32, n)
		var wg sync.WaitGroup
		for w := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < n; i += 2 {
					parent := noState
					if i > 0 {
						parent = uint32(i - 1)
					}
					id, isNew := set.insert(fps[i], parent, uint8(i))
					if !isNew {
						t.Errorf("n=%d: fingerprint %d reported as seen", n, i)
						return
					}
					ids[i] = id
				}
			}()
		}
		wg.Wait()
		if err := set.failure(); err != nil {
			t.Fatal(err)
		}
		bps := set.bytesPerState()
		t.Logf("n=%d: %.2f bytes per state, %d ids", n, bps, set.size())
		if bps > 16 {
			t.Errorf("n=%d: %.2f bytes per state, want ≤ 16", n, bps)
		}
		for i, fp := range fps {
			id, isNew := set.insert(fp, 0, 0)
			if isNew || id != ids[i] {
				t.Fatalf("n=%d: fingerprint %d: id %d new=%v, want %d seen", n, i, id, isNew, ids[i])
			}
			if set.fp(id) != fp || set.goals(id) != uint8(i) {
				t.Fatalf("n=%d: state %d reads back fingerprint %x goals %d", n, i, set.fp(id), set.goals(id))
			}
		}
		for _, i := range []int{0, 1, n / 3, n / 2, n - 2, n - 1} {
			p, err := set.parent(ids[i])
			if err != nil {
				t.Fatal(err)
			}
			want := noState
			if i > 0 {
				want = uint32(i - 1)
			}
			if p != want {
				t.Errorf("n=%d: parent of %d read back as %d, want %d", n, i, p, want)
			}
		}
		set.close()
	}
}

// TestCheckReleasesTheParentsFile checks that the parents file is neither
// left in the temporary directory nor held open after a run, whether it
// ends normally or with an error (here the state limit).
func TestCheckReleasesTheParentsFile(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	m, err := model.New(small(t, map[string]int{"MaxWatchDrops": 1, "Replicas": 2, "Capacity": 2, "PodsPerRS": 3}), "")
	if err != nil {
		t.Fatal(err)
	}
	for _, limit := range []int64{0, 30_000} {
		r, err := Check(context.Background(), m, Options{Symmetry: true, MaxStates: limit})
		if limit == 0 && (err != nil || r.Distinct < 50_000) {
			t.Fatalf("want a run of over 50,000 states (the parents file in use), got %d states, %v", r.Distinct, err)
		}
		if limit > 0 && !errors.Is(err, ErrTooManyStates) {
			t.Fatalf("limit %d: want ErrTooManyStates, got %v", limit, err)
		}
		if left, _ := os.ReadDir(dir); len(left) > 0 {
			t.Errorf("limit %d: %d files left in the temporary directory, first %s", limit, len(left), left[0].Name())
		}
		fds, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Skip("no /proc/self/fd:", err)
		}
		for _, fd := range fds {
			if target, _ := os.Readlink("/proc/self/fd/" + fd.Name()); strings.Contains(target, "kubeproof-model-parents") {
				t.Errorf("limit %d: the parents file is still open: %s", limit, target)
			}
		}
	}
}
