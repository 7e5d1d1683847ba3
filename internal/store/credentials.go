package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"backoffice/internal/column"
	"backoffice/internal/domain"
	"backoffice/internal/sqltx"
)

// ErrCredentialClash means a new credential's prefix or hash is already taken. With random
// prefixes it is rare; the caller makes a new credential and tries again.
var ErrCredentialClash = errors.New("store: credential prefix or hash already in use")

// ErrAlreadyRevoked means a revocation found the credential revoked already.
var ErrAlreadyRevoked = errors.New("store: credential already revoked")

// NewAPIKey is what CreateAPIKey stores about a key: its hash and public prefix, never the key.
type NewAPIKey struct {
	ID        domain.ID
	UserID    domain.ID
	Name      string
	Prefix    string
	Hash      []byte
	CreatedAt time.Time
	ExpiresAt *time.Time // nil: never expires
	// SecretBits is the secret's strength (secrets.IssuedCredentialBits): the hash cannot tell it.
	SecretBits int
}

// APIKeyInfo is an API key as listed: everything but its secret. Keys imported from a dataset file
// have no prefix and no creation time.
type APIKeyInfo struct {
	ID         domain.ID
	UserID     domain.ID
	Name       string
	Prefix     *string
	CreatedAt  *time.Time
	ExpiresAt  *time.Time
	LastUsedAt *time.Time
	RevokedAt  *time.Time
}

// APIKeyFilter narrows ListAPIKeys; zero fields match everything.
type APIKeyFilter struct {
	UserID domain.ID
	Prefix string
}

// NewSession is what CreateSession stores: the token's hash, never the token.
type NewSession struct {
	ID        domain.ID
	UserID    domain.ID
	Hash      []byte
	CreatedAt time.Time
	ExpiresAt time.Time
	// SecretBits is the token's strength (secrets.IssuedCredentialBits).
	SecretBits int
}

// CreateAPIKey stores a new key for an existing user and its audit event, in one transaction: a
// key exists if and only if its creation is on record.
func (s *Store) CreateAPIKey(ctx context.Context, k NewAPIKey, event domain.AuditEvent) error {
	engine, chain := s.engine, s.trailLog.Chain()
	return s.pool.Tx(ctx, func(q *sqltx.Tx) error {
		if err := requireUser(ctx, q, k.UserID); err != nil {
			return err
		}
		_, err := q.Exec(ctx, `INSERT INTO api_keys (id, user_id, name, prefix, key_hash, created_at, expires_at, secret_bits) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			k.ID, k.UserID, k.Name, k.Prefix, k.Hash, column.Micros(k.CreatedAt), column.NullMicros(k.ExpiresAt), k.SecretBits)
		if err != nil {
			return insertCredentialError(engine, "api key", err)
		}
		return insertAudit(ctx, chain, q, event)
	})
}

// CreateSession stores a new session for an existing user and its audit event, in one transaction.
func (s *Store) CreateSession(ctx context.Context, n NewSession, event domain.AuditEvent) error {
	engine, chain := s.engine, s.trailLog.Chain()
	return s.pool.Tx(ctx, func(q *sqltx.Tx) error {
		if err := requireUser(ctx, q, n.UserID); err != nil {
			return err
		}
		_, err := q.Exec(ctx, `INSERT INTO sessions (id, user_id, token_hash, created_at, expires_at, secret_bits) VALUES (?, ?, ?, ?, ?, ?)`,
			n.ID, n.UserID, n.Hash, column.Micros(n.CreatedAt), column.Micros(n.ExpiresAt), n.SecretBits)
		if err != nil {
			return insertCredentialError(engine, "session", err)
		}
		return insertAudit(ctx, chain, q, event)
	})
}

func insertCredentialError(engine Engine, what string, err error) error {
	if engine.IsUniqueViolation(err) {
		return ErrCredentialClash
	}
	return fmt.Errorf("store: insert %s: %w", what, err)
}

// requireUser answers errNotFound (wrapped with the id) when no user has the id.
func requireUser(ctx context.Context, q runner, id domain.ID) error {
	var n int
	if err := q.QueryRow(ctx, `SELECT count(*) FROM users WHERE id = ?`, id).Scan(&n); err != nil {
		return fmt.Errorf("store: user %s: %w", id, err)
	}
	if n == 0 {
		return fmt.Errorf("user %s: %w", id, errNotFound)
	}
	return nil
}

// UserExists reports whether a user has the id.
func (s *Store) UserExists(ctx context.Context, id domain.ID) (bool, error) {
	err := requireUser(ctx, s.pool, id)
	if errors.Is(err, errNotFound) {
		return false, nil
	}
	return err == nil, err
}

// ListAPIKeys lists the keys matching f, oldest first (imported keys, which have no creation
// time, first), never their secrets.
func (s *Store) ListAPIKeys(ctx context.Context, f APIKeyFilter) ([]APIKeyInfo, error) {
	query := `SELECT id, user_id, name, prefix, created_at, expires_at, last_used_at, revoked_at FROM api_keys`
	var where []string
	var args []any
	if f.UserID != "" {
		where, args = append(where, "user_id = ?"), append(args, f.UserID)
	}
	if f.Prefix != "" {
		where, args = append(where, "prefix = ?"), append(args, f.Prefix)
	}
	if len(where) > 0 {
		query += " WHERE " + strings.Join(where, " AND ")
	}
	query += " ORDER BY COALESCE(created_at, 0), id"
	keys, err := readAll(ctx, s.pool, query, scanAPIKeyInfo, args...)
	if err != nil {
		return nil, fmt.Errorf("store: list api keys: %w", err)
	}
	return keys, nil
}

func scanAPIKeyInfo(r scanner) (APIKeyInfo, error) {
	var k APIKeyInfo
	var prefix sql.NullString
	var created, expires, lastUsed, revoked sql.NullInt64
	err := r.Scan(&k.ID, &k.UserID, &k.Name, &prefix, &created, &expires, &lastUsed, &revoked)
	k.Prefix = column.StrPtr(prefix)
	k.CreatedAt, k.ExpiresAt, k.LastUsedAt, k.RevokedAt = column.TimePtr(created), column.TimePtr(expires), column.TimePtr(lastUsed), column.TimePtr(revoked)
	return k, err
}

// SessionInfo is a session as listed: everything but its token, which the store never had.
// Sessions imported from a dataset file have no creation time.
type SessionInfo struct {
	ID        domain.ID
	UserID    domain.ID
	CreatedAt *time.Time
	ExpiresAt time.Time
	RevokedAt *time.Time
}

// ListSessions lists the sessions of user (of every user when it is empty), oldest first
// (imported sessions, which have no creation time, first). Expired and revoked sessions are
// listed too, as such: the list is how an operator finds a session to revoke or checks that it is.
func (s *Store) ListSessions(ctx context.Context, user domain.ID) ([]SessionInfo, error) {
	query := `SELECT id, user_id, created_at, expires_at, revoked_at FROM sessions`
	var args []any
	if user != "" {
		query, args = query+` WHERE user_id = ?`, append(args, user)
	}
	sessions, err := readAll(ctx, s.pool, query+` ORDER BY COALESCE(created_at, 0), id`, func(r scanner) (SessionInfo, error) {
		var si SessionInfo
		var created, revoked sql.NullInt64
		var expires int64
		err := r.Scan(&si.ID, &si.UserID, &created, &expires, &revoked)
		si.CreatedAt, si.ExpiresAt, si.RevokedAt = column.TimePtr(created), column.FromMicros(expires), column.TimePtr(revoked)
		return si, err
	}, args...)
	if err != nil {
		return nil, fmt.Errorf("store: list sessions: %w", err)
	}
	return sessions, nil
}

// revocation is one credential table's revoke statement and existence check.
type revocation struct {
	what, revoke, exists string
}

var (
	apiKeyRevocation = revocation{what: "api key",
		revoke: `UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL`,
		exists: `SELECT count(*) FROM api_keys WHERE id = ?`}
	sessionRevocation = revocation{what: "session",
		revoke: `UPDATE sessions SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL`,
		exists: `SELECT count(*) FROM sessions WHERE id = ?`}
)

// RevokeAPIKey marks a key revoked at the given time and records the event, in one transaction.
// It answers errNotFound for an unknown id and ErrAlreadyRevoked (recording nothing) for a key
// revoked before.
func (s *Store) RevokeAPIKey(ctx context.Context, id domain.ID, at time.Time, event domain.AuditEvent) error {
	return s.revoke(ctx, apiKeyRevocation, id, at, event)
}

// RevokeSession is RevokeAPIKey for sessions.
func (s *Store) RevokeSession(ctx context.Context, id domain.ID, at time.Time, event domain.AuditEvent) error {
	return s.revoke(ctx, sessionRevocation, id, at, event)
}

func (s *Store) revoke(ctx context.Context, r revocation, id domain.ID, at time.Time, event domain.AuditEvent) error {
	chain := s.trailLog.Chain()
	return s.pool.Tx(ctx, func(q *sqltx.Tx) error {
		res, err := q.Exec(ctx, r.revoke, column.Micros(at), id)
		if err != nil {
			return fmt.Errorf("store: revoke %s %s: %w", r.what, id, err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return fmt.Errorf("store: revoke %s %s: %w", r.what, id, err)
		}
		if n == 1 {
			return insertAudit(ctx, chain, q, event)
		}
		var found int
		if err := q.QueryRow(ctx, r.exists, id).Scan(&found); err != nil {
			return fmt.Errorf("store: revoke %s %s: %w", r.what, id, err)
		}
		if found == 0 {
			return fmt.Errorf("%s %s: %w", r.what, id, errNotFound)
		}
		return ErrAlreadyRevoked
	})
}

// WeakCredential is a usable credential (neither revoked nor expired) whose secret is not known
// to be strong: judged under the minimum when it was imported, or imported before secrets were
// judged at all (Bits nil), when its hash is all that is left and cannot tell.
type WeakCredential struct {
	Kind   string // domain.CredentialAPIKey or domain.CredentialSession
	ID     domain.ID
	UserID domain.ID
	Bits   *int
}

// WeakCredentials lists the credentials usable at now whose secret's strength is under minBits
// or unknown: API keys, then sessions, each in id order.
func (s *Store) WeakCredentials(ctx context.Context, now time.Time, minBits int) ([]WeakCredential, error) {
	var out []WeakCredential
	for _, c := range []struct{ kind, query string }{
		{domain.CredentialAPIKey, `SELECT id, user_id, secret_bits FROM api_keys
WHERE revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?) AND (secret_bits IS NULL OR secret_bits < ?) ORDER BY id`},
		{domain.CredentialSession, `SELECT id, user_id, secret_bits FROM sessions
WHERE revoked_at IS NULL AND expires_at > ? AND (secret_bits IS NULL OR secret_bits < ?) ORDER BY id`},
	} {
		weak, err := readAll(ctx, s.pool, c.query, func(r scanner) (WeakCredential, error) {
			w := WeakCredential{Kind: c.kind}
			var bits sql.NullInt64
			err := r.Scan(&w.ID, &w.UserID, &bits)
			if bits.Valid {
				b := int(bits.Int64)
				w.Bits = &b
			}
			return w, err
		}, column.Micros(now), minBits)
		if err != nil {
			return nil, fmt.Errorf("store: weak credentials: %w", err)
		}
		out = append(out, weak...)
	}
	return out, nil
}
