package domain

import "time"

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
