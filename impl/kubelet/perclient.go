package kubelet

import (
	"reflect"
	"sync"

	"k8s.io/client-go/kubernetes"
)

// perClient holds values that the kubelets of one process share when they
// share a clientset (the benchmarks and the node-memory agent run
// thousands of simulated nodes over one): one value per client and key,
// started on first use and stopped by the caller of its last release.
// Kubelets with clientsets of their own (each its node's credentials, as
// in kubeproof up) share nothing; neither does a client whose dynamic type
// cannot be a map key.
type perClient[K comparable, V any] struct {
	mu sync.Mutex
	m  map[perClientKey[K]]*perClientEntry[V]
}

type perClientKey[K comparable] struct {
	client kubernetes.Interface
	key    K
}

type perClientEntry[V any] struct {
	v     V
	users int
}

// acquire returns the value of (client, key), made by start (called with
// the registry locked) if none runs. release drops this use once (later
// calls do nothing) and reports whether it was the last one: then the value
// is no longer registered and the caller stops it.
func (p *perClient[K, V]) acquire(client kubernetes.Interface, key K, start func() V) (v V, release func() (last bool)) {
	shareable := reflect.TypeOf(client).Comparable()
	k := perClientKey[K]{client, key}
	p.mu.Lock()
	defer p.mu.Unlock()
	var e *perClientEntry[V]
	if shareable {
		e = p.m[k]
	}
	if e == nil {
		e = &perClientEntry[V]{v: start()}
		if shareable {
			if p.m == nil {
				p.m = map[perClientKey[K]]*perClientEntry[V]{}
			}
			p.m[k] = e
		}
	}
	e.users++
	var once sync.Once
	return e.v, func() (last bool) {
		once.Do(func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			if e.users--; e.users > 0 {
				return
			}
			if shareable && p.m[k] == e {
				delete(p.m, k)
			}
			last = true
		})
		return last
	}
}
