package domain

import (
	"errors"
	"time"
)

// KeyClaim is what a push made with an Idempotency-Key found when it claimed its key.
type KeyClaim struct {
	State KeyState
	// Status and Body are the kept answer (KeyDone).
	Status int
	Body   []byte
	// RunningUntil is when a running first request's claim lapses (KeyRunning).
	RunningUntil time.Time
}

// KeyState is the state of an idempotency key when a request claims it.
type KeyState int

const (
	// KeyNew: the key is this request's to run (new, expired, or left by a crashed request).
	KeyNew KeyState = iota + 1
	// KeyRunning: the first request with the key is still running.
	KeyRunning
	// KeyDone: the first request finished; its answer is kept.
	KeyDone
	// KeyReused: the key was used for another line item.
	KeyReused
)

// KeyUse is a request made under an Idempotency-Key, as the store keeps it: whose key, its
// SHA-256 (the store never sees the key itself), the request's time, and until when its answer
// is kept.
type KeyUse struct {
	User      ID
	Hash      []byte
	Now       time.Time
	KeepUntil time.Time
}

// ErrKeyReused reports an Idempotency-Key its user already used for another request.
var ErrKeyReused = errors.New("idempotency key used for another request")
