package store

import (
	"context"
	"database/sql"
	"fmt"

	"backoffice/internal/domain"
	"backoffice/internal/secrets"
)

// Credential kinds, also the labels of their hashes.
const (
	KindAPIKey  = "api key"
	KindSession = "session"
)

// ActorByCredential finds the user behind an unexpired credential of the given kind, by the hash
// of its secret. A credential is valid only as its own kind.
func (s *Store) ActorByCredential(ctx context.Context, kind string, hash []byte) (domain.Actor, error) {
	query := `SELECT u.id, u.partner_id, u.permissions, c.key_hash, c.expires_at FROM api_keys c JOIN users u ON u.id = c.user_id WHERE c.key_hash = ?`
	if kind == KindSession {
		query = `SELECT u.id, u.partner_id, u.permissions, c.token_hash, c.expires_at FROM sessions c JOIN users u ON u.id = c.user_id WHERE c.token_hash = ?`
	}
	var a domain.Actor
	var partner sql.NullString
	var perms string
	var stored []byte
	var expires sql.NullInt64
	err := s.q().row(ctx, query, hash).Scan(&a.UserID, &partner, &perms, &stored, &expires)
	if err != nil {
		if err = noRows(err); err == errNotFound {
			return a, err
		}
		return a, fmt.Errorf("store: credential lookup: %w", err)
	}
	// The index found the row; comparing again in constant time keeps the decision itself free of
	// timing differences.
	if !secrets.Equal(stored, hash) {
		return domain.Actor{}, errNotFound
	}
	if expires.Valid && expires.Int64 <= micros(s.now()) {
		return domain.Actor{}, errNotFound
	}
	a.PartnerID = domain.ID(partner.String)
	a.Permissions = domain.ParsePermissions(perms)
	return a, nil
}
