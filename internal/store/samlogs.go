package store

import (
	"context"
	"fmt"
	"math"

	"backoffice/internal/domain"
)

// EntityVisible reports whether id names a lead, merchant, deployment order, line item or
// equipment that the scope may see. Equipment on no line item belongs to no partner: staff only.
func (s *Store) EntityVisible(ctx context.Context, scope domain.Scope, id domain.ID) (bool, error) {
	rows, err := s.q().query(ctx, `
SELECT partner_id FROM leads WHERE id = ?
UNION ALL SELECT partner_id FROM merchants WHERE id = ?
UNION ALL SELECT m.partner_id FROM deployment_orders o JOIN merchants m ON m.id = o.merchant_id WHERE o.id = ?
UNION ALL SELECT m.partner_id FROM line_items li JOIN deployment_orders o ON o.id = li.order_id JOIN merchants m ON m.id = o.merchant_id WHERE li.id = ?
UNION ALL SELECT COALESCE(m.partner_id, '') FROM equipment e
  LEFT JOIN line_items li ON li.equipment_id = e.id
  LEFT JOIN deployment_orders o ON o.id = li.order_id
  LEFT JOIN merchants m ON m.id = o.merchant_id
  WHERE e.id = ?`, id, id, id, id, id)
	if err != nil {
		return false, fmt.Errorf("store: entity %s: %w", id, err)
	}
	defer rows.Close()
	for rows.Next() {
		var partner string
		if err := rows.Scan(&partner); err != nil {
			return false, fmt.Errorf("store: entity %s: %w", id, err)
		}
		if scope.All() || (partner != "" && scope.Sees(domain.ID(partner))) {
			return true, nil
		}
	}
	return false, rows.Err()
}

// ListSAMActionLogs returns one page of an entity's logs, newest first (ties by id, descending),
// and the entity's total. A page is a range of the maintained positions, found by the
// (entity_id, pos) index: a deep page costs what the first does. The total is the largest
// position, one index probe, computed in the same statement as the page so that the two agree
// even while an import lands; only a page past the end asks for the total on its own.
func (s *Store) ListSAMActionLogs(ctx context.Context, entity domain.ID, page, size int64) ([]domain.SAMActionLog, int64, error) {
	if page > math.MaxInt64/size {
		page = math.MaxInt64 / size // past any possible end; the page comes back empty
	}
	offset := (page - 1) * size
	rows, err := s.q().query(ctx, `
SELECT (SELECT MAX(pos) FROM sam_action_logs WHERE entity_id = ?), id, action, action_date, sam_id
FROM sam_action_logs WHERE entity_id = ? AND pos > ? ORDER BY pos LIMIT ?`, entity, entity, offset, size)
	if err != nil {
		return nil, 0, fmt.Errorf("store: SAM logs of %s: %w", entity, err)
	}
	defer rows.Close()
	logs := make([]domain.SAMActionLog, 0, size)
	var total int64
	for rows.Next() {
		var l domain.SAMActionLog
		var date int64
		if err := rows.Scan(&total, &l.ID, &l.Action, &date, &l.SamID); err != nil {
			return nil, 0, fmt.Errorf("store: SAM logs of %s: %w", entity, err)
		}
		l.EntityID, l.ActionDate = entity, fromMicros(date)
		logs = append(logs, l)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("store: SAM logs of %s: %w", entity, err)
	}
	if len(logs) == 0 {
		if err := s.q().row(ctx, `SELECT COALESCE(MAX(pos), 0) FROM sam_action_logs WHERE entity_id = ?`, entity).Scan(&total); err != nil {
			return nil, 0, fmt.Errorf("store: SAM logs of %s: %w", entity, err)
		}
	}
	return logs, total, nil
}
