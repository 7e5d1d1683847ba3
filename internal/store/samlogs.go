package store

import (
	"context"
	"database/sql"
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
// and the entity's total. Both come from one statement, so they agree even while an import
// lands. A page is a range of the maintained positions: a deep page costs what the first does.
func (s *Store) ListSAMActionLogs(ctx context.Context, entity domain.ID, page, size int64) ([]domain.SAMActionLog, int64, error) {
	if page > math.MaxInt64/size {
		page = math.MaxInt64 / size // past any possible end; the page comes back empty
	}
	offset := (page - 1) * size
	rows, err := s.q().query(ctx, `
SELECT t.total, l.id, l.action, l.action_date, l.sam_id
FROM (SELECT COALESCE(MAX(pos), 0) AS total FROM sam_action_logs WHERE entity_id = ?) AS t
LEFT JOIN (SELECT id, action, action_date, sam_id, pos FROM sam_action_logs
           WHERE entity_id = ? AND pos > ? ORDER BY pos LIMIT ?) AS l ON TRUE
ORDER BY l.pos`, entity, entity, offset, size)
	if err != nil {
		return nil, 0, fmt.Errorf("store: SAM logs of %s: %w", entity, err)
	}
	defer rows.Close()
	logs := make([]domain.SAMActionLog, 0, size)
	var total int64
	for rows.Next() {
		var id, action sql.NullString
		var date, samID sql.NullInt64
		if err := rows.Scan(&total, &id, &action, &date, &samID); err != nil {
			return nil, 0, fmt.Errorf("store: SAM logs of %s: %w", entity, err)
		}
		if !id.Valid { // the page is empty: only the total row came back
			continue
		}
		logs = append(logs, domain.SAMActionLog{ID: domain.ID(id.String), EntityID: entity, Action: action.String,
			ActionDate: fromMicros(date.Int64), SamID: samID.Int64})
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("store: SAM logs of %s: %w", entity, err)
	}
	return logs, total, nil
}
