package store

import (
	"sync"
	"time"

	"backoffice/internal/domain"
)

// lastUseStamps is, per API key, the last use this process stamped or is stamping.
type lastUseStamps struct {
	mu sync.Mutex
	at map[domain.ID]time.Time
}

// claim takes the stamp of id's use at, unless a use within every before it is stamped or being
// stamped.
func (l *lastUseStamps) claim(id domain.ID, at time.Time, every time.Duration) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if last, ok := l.at[id]; ok && last.After(at.Add(-every)) {
		return false
	}
	if l.at == nil {
		l.at = make(map[domain.ID]time.Time)
	}
	l.at[id] = at
	return true
}

// release gives up the stamp of id's use at, which was not written: the next use claims it again.
func (l *lastUseStamps) release(id domain.ID, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.at[id].Equal(at) {
		delete(l.at, id)
	}
}
