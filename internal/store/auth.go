package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"backoffice/internal/domain"
	"backoffice/internal/secrets"
)

// Credential kinds, also the labels of their hashes.
const (
	KindAPIKey  = "api key"
	KindSession = "session"
)

// lastUseGranularity is how stale an API key's last_used_at may get before a request refreshes
// it: a write per key per minute at most, instead of a write per request.
const lastUseGranularity = time.Minute

// Each kind's lookup, in plain sight. Sessions record no last use; CAST keeps the column list
// the same shape for both engines.
const (
	apiKeyLookup = `SELECT c.id, u.id, u.partner_id, u.permissions, c.key_hash, c.expires_at, c.revoked_at, c.last_used_at
FROM api_keys c JOIN users u ON u.id = c.user_id WHERE c.key_hash = ?`
	sessionLookup = `SELECT c.id, u.id, u.partner_id, u.permissions, c.token_hash, c.expires_at, c.revoked_at, CAST(NULL AS BIGINT)
FROM sessions c JOIN users u ON u.id = c.user_id WHERE c.token_hash = ?`
)

// credentialRow is one credential with its user, as the lookups read it.
type credentialRow struct {
	id                         string
	actor                      domain.Actor
	partner                    sql.NullString
	perms                      string
	hash                       []byte
	expires, revoked, lastUsed sql.NullInt64
}

// ActorByCredential finds the user behind a usable credential of the given kind, by the hash of
// its secret: unexpired and not revoked. A credential is valid only as its own kind. Nothing is
// cached: a revocation or expiry holds from the next request on, on every replica sharing the
// database.
func (s *Store) ActorByCredential(ctx context.Context, kind string, hash []byte) (domain.Actor, error) {
	c, err := s.credential(ctx, kind, hash)
	if err != nil {
		return domain.Actor{}, err
	}
	now := s.now()
	if !c.usable(hash, now) {
		return domain.Actor{}, errNotFound
	}
	if kind == KindAPIKey && (!c.lastUsed.Valid || c.lastUsed.Int64 <= micros(now.Add(-lastUseGranularity))) {
		s.noteUse(c.id, now)
	}
	return c.actor, nil
}

// credential reads a credential of the kind by the hash of its secret.
func (s *Store) credential(ctx context.Context, kind string, hash []byte) (credentialRow, error) {
	query := apiKeyLookup
	if kind == KindSession {
		query = sessionLookup
	}
	var c credentialRow
	err := s.q().row(ctx, query, hash).Scan(&c.id, &c.actor.UserID, &c.partner, &c.perms, &c.hash, &c.expires, &c.revoked, &c.lastUsed)
	if err != nil {
		if err = noRows(err); err == errNotFound {
			return c, err
		}
		return c, fmt.Errorf("store: credential lookup: %w", err)
	}
	c.actor.PartnerID = domain.ID(c.partner.String)
	c.actor.Permissions = domain.ParsePermissions(c.perms)
	return c, nil
}

// usable decides whether the credential may authenticate now.
func (c *credentialRow) usable(hash []byte, now time.Time) bool {
	// The index found the row; comparing again in constant time keeps the decision itself free of
	// timing differences.
	if !secrets.Equal(c.hash, hash) {
		return false
	}
	if c.revoked.Valid {
		return false
	}
	return !c.expires.Valid || c.expires.Int64 > micros(now)
}

// noteUse stamps an API key's last use in the background: bookkeeping must neither delay nor fail
// the request it describes. At most one stamp per key is in flight in this process, and the
// UPDATE's own condition keeps replicas from stamping the same minute twice.
func (s *Store) noteUse(id string, at time.Time) {
	if _, busy := s.stamping.LoadOrStore(id, true); busy {
		return
	}
	s.background.Go(func() {
		defer s.stamping.Delete(id)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		// An error leaves last_used_at a little stale, which is all it is for; the next request
		// a minute on tries again.
		_, _ = s.q().exec(ctx, `UPDATE api_keys SET last_used_at = ? WHERE id = ? AND (last_used_at IS NULL OR last_used_at <= ?)`,
			micros(at), id, micros(at.Add(-lastUseGranularity)))
	})
}

// WaitBackground waits for background bookkeeping (last-use stamps) to be written. Close calls
// it; tests call it before reading what a request stamped.
func (s *Store) WaitBackground() { s.background.Wait() }
