package framework

import (
	"errors"
	"testing"
)

type countState struct{ n int }

func (s *countState) Clone() StateData { c := *s; return &c }

func readCount(t *testing.T, c *CycleState, key StateKey) int {
	t.Helper()
	d, err := c.Read(key)
	if err != nil {
		t.Fatalf("Read(%q): %v", key, err)
	}
	return d.(*countState).n
}

// Reads find what was last written under each key, a deleted key is not
// found, and a clone's entries change without changing the original's.
func TestCycleStateReadWriteDeleteClone(t *testing.T) {
	c := NewCycleState()
	if _, err := c.Read("a"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Read of an empty state: %v, want ErrNotFound", err)
	}
	c.Write("a", &countState{1})
	c.Write("b", &countState{2})
	c.Write("a", &countState{3})
	if a, b := readCount(t, c, "a"), readCount(t, c, "b"); a != 3 || b != 2 {
		t.Fatalf("a = %d, b = %d, want 3 and 2", a, b)
	}
	clone := c.Clone()
	d, _ := clone.Read("a")
	d.(*countState).n = 30
	clone.Write("c", &countState{4})
	clone.Delete("b")
	if a := readCount(t, c, "a"); a != 3 {
		t.Errorf("original's a = %d after the clone's changed, want 3", a)
	}
	if _, err := c.Read("c"); !errors.Is(err, ErrNotFound) {
		t.Errorf("original sees the clone's write: %v", err)
	}
	if b := readCount(t, c, "b"); b != 2 {
		t.Errorf("original's b = %d after the clone deleted its own, want 2", b)
	}
	if _, err := clone.Read("b"); !errors.Is(err, ErrNotFound) {
		t.Errorf("deleted b still read from the clone: %v", err)
	}
	if a, cc := readCount(t, clone, "a"), readCount(t, clone, "c"); a != 30 || cc != 4 {
		t.Errorf("clone's a = %d, c = %d, want 30 and 4", a, cc)
	}
}
