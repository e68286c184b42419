package telemetry

import (
	"sync"
	"sync/atomic"
)

// cache maps label combinations to their series. Reads are a lock-free load of an
// immutable map; a miss builds the series under a lock and publishes a copy of the map
// with it. Label values are catalogue names, so the map stays small and misses stop once
// every combination in use has been seen.
type cache[K comparable, V any] struct {
	cur   atomic.Pointer[map[K]V]
	mu    sync.Mutex
	build func(K) V
}

func (c *cache[K, V]) get(k K) V {
	if m := c.cur.Load(); m != nil {
		if v, ok := (*m)[k]; ok {
			return v
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.cur.Load()
	if old != nil {
		if v, ok := (*old)[k]; ok {
			return v
		}
	}
	n := make(map[K]V, 1+len(ptrMap(old)))
	for k, v := range ptrMap(old) {
		n[k] = v
	}
	v := c.build(k)
	n[k] = v
	c.cur.Store(&n)
	return v
}

func ptrMap[K comparable, V any](m *map[K]V) map[K]V {
	if m == nil {
		return nil
	}
	return *m
}
