package store

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"slices"

	"backoffice/internal/domain"
	"backoffice/internal/store/column"
)

// acceptanceQuery reads a lead's service acceptance: the lead's columns repeat on each catalogue
// row (on one row with no plan columns when the catalogue is empty); no row at all means no such
// lead.
const acceptanceQuery = `
SELECT l.partner_id, l.mid_id, l.sa_configured, l.sa_ebt_fcs_number, l.sa_amex_program, l.sa_amex_esa_number, l.sa_ebt_benefit_mode,
       c.id, c.code, c.display_name, c.sort_order, lc.lead_id IS NOT NULL
FROM leads l
LEFT JOIN card_plans c ON TRUE
LEFT JOIN lead_card_plans lc ON lc.card_plan_id = c.id AND lc.lead_id = l.id
WHERE l.id = ?
ORDER BY c.sort_order, c.id`

// principalSSNQuery reads a principal's sealed SSN with the partner of its lead.
const principalSSNQuery = `SELECT l.partner_id, p.ssn_key_id, p.ssn_sealed FROM principals p JOIN leads l ON l.id = p.lead_id WHERE p.id = ? AND p.lead_id = ?`

// ServiceAcceptance returns a lead's service acceptance with the whole card-plan catalogue,
// sorted by sortOrder, marking the lead's plans. A lead with none stored reads as not configured.
// One statement: the lead's columns repeat on each catalogue row (on one row with no plan
// columns when the catalogue is empty); no row at all means no such lead.
func (s *Store) ServiceAcceptance(ctx context.Context, scope domain.Scope, leadID domain.ID) (domain.ServiceAcceptance, error) {
	owned, err := readCached(ctx, s, cacheKey{read: acceptanceRead, a: string(leadID)},
		func(r cachedReader) (ownedAcceptance, error) {
			return rereading(ctx, s, func() (ownedAcceptance, error) { return serviceAcceptance(ctx, r, leadID) })()
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
	owned, err := readCached(ctx, s, cacheKey{read: ssnRead, a: string(leadID), b: string(principalID)},
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

// notFoundOr passes the not-found sentinel through and wraps anything else with context.
func notFoundOr(err error, format string, args ...any) error {
	if err = noRows(err); err == errNotFound {
		return err
	}
	return fmt.Errorf("store: "+format+": %w", append(args, err)...)
}
