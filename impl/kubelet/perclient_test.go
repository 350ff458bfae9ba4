package kubelet

import (
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
)

// lookup is the registered value of (client, key) and its number of users
// (the zero value and 0 when none is registered).
func (p *perClient[K, V]) lookup(client kubernetes.Interface, key K) (v V, users int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e := p.m[perClientKey[K]{client, key}]; e != nil {
		return e.v, e.users
	}
	return v, 0
}

func TestPerClientSharesPerClientAndKeyUntilTheLastRelease(t *testing.T) {
	var p perClient[string, *int]
	started := 0
	start := func() *int { started++; n := started; return &n }
	c1, c2 := fake.NewClientset(), fake.NewClientset()

	a, releaseA := p.acquire(c1, "x", start)
	b, releaseB := p.acquire(c1, "x", start)
	c, releaseC := p.acquire(c2, "x", start)
	d, releaseD := p.acquire(c1, "y", start)
	if a != b || a == c || a == d || c == d || started != 3 {
		t.Fatalf("values %d %d %d %d after %d starts, want one per client and key", *a, *b, *c, *d, started)
	}
	if v, users := p.lookup(c1, "x"); v != a || users != 2 {
		t.Fatalf("registered %v with %d users, want %v with 2", v, users, a)
	}
	if releaseA() || releaseA() {
		t.Fatal("a release with another user left reported the last one")
	}
	if _, users := p.lookup(c1, "x"); users != 1 {
		t.Fatalf("%d users after one release (twice), want 1", users)
	}
	if !releaseB() {
		t.Fatal("the last release did not say so")
	}
	if v, _ := p.lookup(c1, "x"); v != nil {
		t.Fatal("value still registered after its last release")
	}
	if !releaseC() || !releaseD() {
		t.Fatal("the only users' releases were not the last")
	}
	// A new use after the last release starts anew.
	if e, _ := p.acquire(c1, "x", start); e == a || started != 4 {
		t.Fatal("a released value was reused")
	}
}
