package store

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"slices"

	"backoffice/internal/column"
	"backoffice/internal/domain"
)

// ServiceAcceptance returns a lead's service acceptance with the whole card-plan catalogue,
// sorted by sortOrder, marking the lead's plans. A lead with none stored reads as not configured.
// One statement: the lead's columns repeat on each catalogue row (on one row with no plan
// columns when the catalogue is empty); no row at all means no such lead.
func (s *Store) ServiceAcceptance(ctx context.Context, scope domain.Scope, leadID domain.ID) (domain.ServiceAcceptance, error) {
	owned, err := readCached(ctx, s.cache, s.pool, cacheKey{read: acceptanceRead, a: string(leadID)},
		func(r cachedReader) (ownedAcceptance, error) {
			return rereading(ctx, s.pool, func() (ownedAcceptance, error) { return serviceAcceptance(ctx, r, leadID) })()
		}, copyAcceptance)
	if err != nil {
		return domain.ServiceAcceptance{}, err
	}
	if !scope.Sees(owned.partner) {
		return domain.ServiceAcceptance{}, errNotFound
	}
	return owned.ServiceAcceptance, nil
}

func copyAcceptance(a ownedAcceptance) ownedAcceptance {
	a.CardPlans = slices.Clone(a.CardPlans)
	return a
}

// ownedAcceptance is a lead's service acceptance with the partner the lead belongs to.
type ownedAcceptance struct {
	domain.ServiceAcceptance
	partner domain.ID
}

func serviceAcceptance(ctx context.Context, r cachedReader, leadID domain.ID) (ownedAcceptance, error) {
	var sa domain.ServiceAcceptance
	rows, err := r.Query(ctx, acceptanceQuery, leadID)
	if err != nil {
		return ownedAcceptance{}, fmt.Errorf("store: lead %s: %w", leadID, err)
	}
	defer rows.Close()
	found := false
	sa.CardPlans = []domain.CardPlanSelection{}
	var partner string
	var mid, fcs, amex, esa, ebt, planID, code, name sql.NullString
	var configured sql.NullBool
	var sortOrder sql.NullInt64
	var selected bool
	for rows.Next() {
		if err := rows.Scan(&partner, &mid, &configured, &fcs, &amex, &esa, &ebt, &planID, &code, &name, &sortOrder, &selected); err != nil {
			return ownedAcceptance{}, fmt.Errorf("store: lead %s: %w", leadID, err)
		}
		found = true
		if planID.Valid {
			sa.CardPlans = append(sa.CardPlans, domain.CardPlanSelection{CardPlan: domain.CardPlan{ID: domain.ID(planID.String),
				Code: code.String, DisplayName: name.String, SortOrder: sortOrder.Int64}, Selected: selected})
		}
	}
	if err := rows.Err(); err != nil {
		return ownedAcceptance{}, fmt.Errorf("store: lead %s: %w", leadID, err)
	}
	if !found {
		return ownedAcceptance{}, errNotFound
	}
	sa.MidID = column.IDPtr(mid)
	sa.Configured = configured.Valid && configured.Bool
	sa.EBTFcsNumber, sa.AmexProgram, sa.AmexEsaNumber, sa.EBTBenefitMode = column.StrPtr(fcs), column.StrPtr(amex), column.StrPtr(esa), column.StrPtr(ebt)
	return ownedAcceptance{sa, domain.ID(partner)}, nil
}

// PrincipalSSN returns the sealed SSN of a principal of a lead visible to the scope.
func (s *Store) PrincipalSSN(ctx context.Context, scope domain.Scope, leadID, principalID domain.ID) (domain.SealedSSN, error) {
	owned, err := readCached(ctx, s.cache, s.pool, cacheKey{read: ssnRead, a: string(leadID), b: string(principalID)},
		func(r cachedReader) (ownedSSN, error) { return principalSSN(ctx, r, leadID, principalID) }, copySSN)
	if err != nil {
		return domain.SealedSSN{}, err
	}
	if !scope.Sees(owned.partner) {
		return domain.SealedSSN{}, errNotFound
	}
	return owned.SealedSSN, nil
}

func copySSN(o ownedSSN) ownedSSN {
	o.Sealed = bytes.Clone(o.Sealed)
	return o
}

// ownedSSN is a principal's sealed SSN with the partner of the principal's lead.
type ownedSSN struct {
	domain.SealedSSN
	partner domain.ID
}

func principalSSN(ctx context.Context, r cachedReader, leadID, principalID domain.ID) (ownedSSN, error) {
	var out domain.SealedSSN
	var partner string
	var keyID sql.NullString
	err := r.QueryRow(ctx, principalSSNQuery, principalID, leadID).Scan(&partner, &keyID, &out.Sealed)
	if err != nil {
		return ownedSSN{}, notFoundOr(err, "principal %s", principalID)
	}
	out.KeyID, out.Found = keyID.String, keyID.Valid
	return ownedSSN{out, domain.ID(partner)}, nil
}
