package expectations

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestExpectationsLifecycle(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	e := New(clk)
	if !e.Satisfied("ns/rs") {
		t.Fatal("no record must be satisfied")
	}
	e.ExpectCreations("ns/rs", 2)
	if e.Satisfied("ns/rs") {
		t.Fatal("2 pending creations must not be satisfied")
	}
	e.CreationObserved("ns/rs")
	if e.Satisfied("ns/rs") {
		t.Fatal("1 pending creation must not be satisfied")
	}
	e.CreationObserved("ns/rs")
	if !e.Satisfied("ns/rs") {
		t.Fatal("all creations observed must be satisfied")
	}
	e.ExpectDeletions("ns/rs", []string{"ns/a", "ns/b"})
	e.DeletionObserved("ns/rs", "ns/a")
	e.DeletionObserved("ns/rs", "ns/a") // a repeat must not count twice
	e.DeletionObserved("ns/rs", "ns/zzz")
	if e.Satisfied("ns/rs") {
		t.Fatal("ns/b deletion still pending")
	}
	e.DeletionObserved("ns/rs", "ns/b")
	if !e.Satisfied("ns/rs") {
		t.Fatal("all deletions observed must be satisfied")
	}
}

func TestExpectationsExpire(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	e := New(clk)
	e.ExpectCreations("k", 5)
	clk.SetTime(clk.Now().Add(Timeout))
	if e.Satisfied("k") {
		t.Fatal("exactly Timeout old must still be trusted")
	}
	clk.SetTime(clk.Now().Add(time.Second))
	if !e.Satisfied("k") {
		t.Fatal("expectations older than Timeout must expire")
	}
}
