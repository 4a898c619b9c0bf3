package formats

import (
	"container/list"
	"sync"
	"time"
)

// lru is a small cache bounded in entries and in age, for caches keyed by
// what a message controls: without both bounds, a stream of distinct keys
// (or one old key kept alive) holds memory forever. It is safe for
// concurrent use; a Get moves its entry to the front, so it takes the lock
// exclusively.
type lru[K comparable, V any] struct {
	max int
	ttl time.Duration
	now func() time.Time

	mu    sync.Mutex
	order *list.List // of *lruEntry, most recently used first
	items map[K]*list.Element
}

type lruEntry[K comparable, V any] struct {
	key     K
	val     V
	expires time.Time
}

func newLRU[K comparable, V any](max int, ttl time.Duration) *lru[K, V] {
	return &lru[K, V]{max: max, ttl: ttl, now: time.Now, order: list.New(), items: make(map[K]*list.Element, max)}
}

// Get returns the value cached for k, unless it is older than the ttl.
func (c *lru[K, V]) Get(k K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var zero V
	el, ok := c.items[k]
	if !ok {
		return zero, false
	}
	e := el.Value.(*lruEntry[K, V])
	if c.now().After(e.expires) {
		c.order.Remove(el)
		delete(c.items, k)
		return zero, false
	}
	c.order.MoveToFront(el)
	return e.val, true
}

// Add caches v for k, evicting the least recently used entry when full.
// The entry expires ttl after it was added, however often it is read: the
// age bound holds even for a key in constant use.
func (c *lru[K, V]) Add(k K, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	exp := c.now().Add(c.ttl)
	if el, ok := c.items[k]; ok {
		e := el.Value.(*lruEntry[K, V])
		e.val, e.expires = v, exp
		c.order.MoveToFront(el)
		return
	}
	c.items[k] = c.order.PushFront(&lruEntry[K, V]{key: k, val: v, expires: exp})
	for c.order.Len() > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.items, last.Value.(*lruEntry[K, V]).key)
	}
}

// Len is the number of entries, expired ones included until they are met.
func (c *lru[K, V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
