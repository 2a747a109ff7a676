package execute

import "sync"

// keyedMutex serialises work per key: one record at a time, any number of
// records at once.
type keyedMutex struct {
	mu    sync.Mutex
	locks map[string]*keyLock
}

type keyLock struct {
	mu   sync.Mutex
	refs int
}

func newKeyedMutex() *keyedMutex { return &keyedMutex{locks: map[string]*keyLock{}} }

func (k *keyedMutex) lock(key string) func() {
	k.mu.Lock()
	l := k.locks[key]
	if l == nil {
		l = &keyLock{}
		k.locks[key] = l
	}
	l.refs++
	k.mu.Unlock()
	l.mu.Lock()
	return k.unlocker(key, l)
}

// unlocker returns the unlock of key's lock l, which drops l once no one
// holds or waits for it.
func (k *keyedMutex) unlocker(key string, l *keyLock) func() {
	return func() {
		l.mu.Unlock()
		k.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(k.locks, key)
		}
		k.mu.Unlock()
	}
}

// tryLock locks key unless it is locked already; ok is false then.
func (k *keyedMutex) tryLock(key string) (unlock func(), ok bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.locks[key] != nil {
		return nil, false
	}
	l := &keyLock{refs: 1}
	l.mu.Lock()
	k.locks[key] = l
	return k.unlocker(key, l), true
}
