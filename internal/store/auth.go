package store

import (
	"bytes"
	"context"
	"database/sql"
	"slices"
	"time"

	"backoffice/internal/column"
	"backoffice/internal/domain"
)

// Credential reads the credential of the kind (domain.CredentialAPIKey or
// domain.CredentialSession) whose secret hashes to hash, with its user. A credential is found only
// as its own kind. Whether it may be used is auth's rule. A revocation or expiry holds from the
// next request on, on every replica sharing the database: the read cache keeps a credential only
// while no connection anywhere has changed what it reads since.
func (s *Store) Credential(ctx context.Context, kind string, hash []byte) (domain.Credential, error) {
	return readCached(ctx, s.cache, s.pool, cacheKey{read: credentialRead, a: kind, b: string(hash)},
		func(r cachedReader) (domain.Credential, error) { return credential(ctx, r, kind, hash) }, copyCredential)
}

func copyCredential(c domain.Credential) domain.Credential {
	c.Hash = bytes.Clone(c.Hash)
	c.Actor.Permissions = slices.Clone(c.Actor.Permissions)
	return c
}

func credential(ctx context.Context, r cachedReader, kind string, hash []byte) (domain.Credential, error) {
	query := apiKeyLookup
	if kind == domain.CredentialSession {
		query = sessionLookup
	}
	var c domain.Credential
	var partner sql.NullString
	var perms string
	var expires, revoked, lastUsed sql.NullInt64
	err := r.QueryRow(ctx, query, hash).Scan(&c.ID, &c.Actor.UserID, &partner, &perms, &c.UserDisabled, &c.Hash, &expires, &revoked, &lastUsed)
	if err != nil {
		return c, notFoundOr(err, "credential lookup")
	}
	c.Actor.PartnerID = domain.ID(partner.String)
	c.Actor.Permissions = domain.ParsePermissions(perms)
	c.ExpiresAt, c.RevokedAt, c.LastUsedAt = column.TimePtr(expires), column.TimePtr(revoked), column.TimePtr(lastUsed)
	return c, nil
}

// Account reads the user ref names (by id or by external id), or domain.ErrNotFound: whom an
// access token acts as. Whether the user may act is auth's rule. Like Credential, it is read
// afresh once anything a credential lookup reads has changed, by anyone.
func (s *Store) Account(ctx context.Context, ref domain.UserRef) (domain.Account, error) {
	by := "id"
	if ref.Key == domain.UserKeyExternalID {
		by = "external id"
	}
	return readCached(ctx, s.cache, s.pool, cacheKey{read: accountRead, a: by, b: ref.Value},
		func(r cachedReader) (domain.Account, error) { return account(ctx, r, ref) }, copyAccount)
}

func copyAccount(a domain.Account) domain.Account {
	a.Actor.Permissions = slices.Clone(a.Actor.Permissions)
	return a
}

func account(ctx context.Context, r cachedReader, ref domain.UserRef) (domain.Account, error) {
	query := accountByID
	if ref.Key == domain.UserKeyExternalID {
		query = accountByExternalID
	}
	var a domain.Account
	var partner sql.NullString
	var perms string
	err := r.QueryRow(ctx, query, ref.Value).Scan(&a.Actor.UserID, &partner, &perms, &a.Disabled)
	if err != nil {
		return a, notFoundOr(err, "account lookup")
	}
	a.Actor.PartnerID = domain.ID(partner.String)
	a.Actor.Permissions = domain.ParsePermissions(perms)
	return a, nil
}

// NoteAPIKeyUse stamps an API key's last use in the background: bookkeeping must neither delay nor
// fail the request it describes. The UPDATE's own condition keeps replicas from stamping the same
// interval twice.
//
// A stamp moves no cache generation (last_used_at is no column the triggers watch), so a cached
// credential keeps the last use it was read with, and the caller asks again on every request once
// that is older than every. This process remembers what it stamped instead, and what it is
// stamping, and writes at most once per key per every.
func (s *Store) NoteAPIKeyUse(id domain.ID, at time.Time, every time.Duration) {
	if !s.stamps.claim(id, at, every) {
		return
	}
	s.background.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		// An error leaves last_used_at a little stale, which is all it is for; the next request
		// tries again.
		_, err := s.pool.Exec(ctx, `UPDATE api_keys SET last_used_at = ? WHERE id = ? AND (last_used_at IS NULL OR last_used_at <= ?)`,
			column.Micros(at), id, column.Micros(at.Add(-every)))
		if err != nil {
			s.stamps.release(id, at)
		}
	})
}
