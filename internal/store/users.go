package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"

	"backoffice/internal/column"
	"backoffice/internal/domain"
	"backoffice/internal/sqltx"
)

// ErrUserClash means a new user's id, or its external id, is another user's already.
var ErrUserClash = errors.New("store: user id or external id already in use")

// ErrEmailTaken means a new user's email is another user's already (letter case aside).
var ErrEmailTaken = errors.New("store: a user has this email already")

// ErrUnchanged means a user change found the user as it was asked to leave it; nothing was
// written, no event either.
var ErrUnchanged = errors.New("store: the user is that way already")

const userColumns = `id, partner_id, email, permissions, external_id, disabled`

// UserArgs are a user's values in the order of UserColumns.
func UserArgs(u *domain.User) []any {
	return []any{u.ID, column.NullID(u.PartnerID), u.Email, domain.FormatPermissions(u.Permissions), column.NullString(u.ExternalID), u.Disabled}
}

// scanUser reads a user's columns; no permissions read as an empty list.
func scanUser(r scanner) (domain.User, error) {
	var u domain.User
	var partner, external sql.NullString
	var perms string
	err := r.Scan(&u.ID, &partner, &u.Email, &perms, &external, &u.Disabled)
	u.PartnerID, u.Permissions, u.ExternalID = column.IDPtr(partner), domain.ParsePermissions(perms), column.StrPtr(external)
	if u.Permissions == nil {
		u.Permissions = []domain.Permission{}
	}
	return u, err
}

// CreateUser stores a new user and its audit event, in one transaction. A partner that is not
// stored answers errNotFound; an email another user has (letter case aside) ErrEmailTaken, naming
// that user; an id or external id in use ErrUserClash.
func (s *Store) CreateUser(ctx context.Context, u domain.User, event domain.AuditEvent) error {
	engine, chain := s.engine, s.trailLog.Chain()
	return s.pool.Tx(ctx, func(q *sqltx.Tx) error {
		if u.PartnerID != nil {
			var n int
			if err := q.QueryRow(ctx, `SELECT count(*) FROM partners WHERE id = ?`, *u.PartnerID).Scan(&n); err != nil {
				return fmt.Errorf("store: partner %s: %w", *u.PartnerID, err)
			}
			if n == 0 {
				return fmt.Errorf("partner %s: %w", *u.PartnerID, errNotFound)
			}
		}
		var other domain.ID
		switch err := q.QueryRow(ctx, `SELECT id FROM users WHERE lower(email) = lower(?) ORDER BY id LIMIT 1`, u.Email).Scan(&other); {
		case err == nil:
			return fmt.Errorf("%w: user %s", ErrEmailTaken, other)
		case !errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("store: user by email: %w", err)
		}
		_, err := q.Exec(ctx, `INSERT INTO users (`+userColumns+`) VALUES (?, ?, ?, ?, ?, ?)`, UserArgs(&u)...)
		if err != nil {
			if engine.IsUniqueViolation(err) {
				return ErrUserClash
			}
			return fmt.Errorf("store: insert user: %w", err)
		}
		return insertAudit(ctx, chain, q, event)
	})
}

// ListUsers lists every user, by email then id.
func (s *Store) ListUsers(ctx context.Context) ([]domain.User, error) {
	users, err := readAll(ctx, s.pool, `SELECT `+userColumns+` FROM users ORDER BY email, id`, scanUser)
	if err != nil {
		return nil, fmt.Errorf("store: list users: %w", err)
	}
	return users, nil
}

// UserChange changes a user's permissions or disabled flag (the rest it may not change) and
// says what was done, as the detail of its audit event.
type UserChange func(u *domain.User) (detail string)

// ChangeUser applies change to the stored user and writes the result with its audit event
// (event, its Detail from change), in one transaction. An unknown id answers errNotFound; a change
// that leaves the user as it was writes nothing and answers ErrUnchanged. The write holds only
// if the user is still as change saw it: when another writer got there first, the change is made
// again on what that writer left.
func (s *Store) ChangeUser(ctx context.Context, id domain.ID, change UserChange, event domain.AuditEvent) (domain.User, error) {
	chain := s.trailLog.Chain()
	for range 5 {
		var after domain.User
		raced := false
		err := s.pool.Tx(ctx, func(q *sqltx.Tx) error {
			before, err := scanUser(q.QueryRow(ctx, `SELECT `+userColumns+` FROM users WHERE id = ?`, id))
			if errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("user %s: %w", id, errNotFound)
			}
			if err != nil {
				return fmt.Errorf("store: user %s: %w", id, err)
			}
			after = before
			after.Permissions = slices.Clone(before.Permissions)
			e := event
			e.Detail = change(&after)
			if after.Disabled == before.Disabled && slices.Equal(after.Permissions, before.Permissions) {
				return ErrUnchanged
			}
			res, err := q.Exec(ctx, `UPDATE users SET permissions = ?, disabled = ? WHERE id = ? AND permissions = ? AND disabled = ?`,
				domain.FormatPermissions(after.Permissions), after.Disabled, id, domain.FormatPermissions(before.Permissions), before.Disabled)
			if err != nil {
				return fmt.Errorf("store: change user %s: %w", id, err)
			}
			n, err := res.RowsAffected()
			if err != nil {
				return fmt.Errorf("store: change user %s: %w", id, err)
			}
			if n != 1 {
				raced = true
				return nil
			}
			return insertAudit(ctx, chain, q, e)
		})
		if err != nil || !raced {
			return after, err
		}
	}
	return domain.User{}, fmt.Errorf("store: change user %s: changed by other writers each time it was read; try again", id)
}
