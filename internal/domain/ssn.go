package domain

import (
	"fmt"
	"log/slog"
)

// SSN is a plaintext social security number. It redacts itself everywhere it could leak by
// accident (fmt verbs, slog); only Reveal gives the value, so every disclosure is greppable.
type SSN struct{ v string }

// NewSSN wraps a plaintext value.
func NewSSN(s string) SSN { return SSN{v: s} }

// Reveal returns the plaintext.
func (s SSN) Reveal() string { return s.v }

const redacted = "[REDACTED]"

func (s SSN) String() string               { return redacted }
func (s SSN) GoString() string             { return redacted }
func (s SSN) Format(f fmt.State, _ rune)   { fmt.Fprint(f, redacted) }
func (s SSN) LogValue() slog.Value         { return slog.StringValue(redacted) }
func (s SSN) MarshalText() ([]byte, error) { return []byte(redacted), nil }
