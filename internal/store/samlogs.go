package store

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"slices"

	"backoffice/internal/domain"
	"backoffice/internal/store/column"
	"backoffice/internal/store/sqltx"
)

// samPageQuery selects the entity's total and the logs of a page, newest first; the caller adds
// any condition, the order (samPageOrder) and the limit. Its arguments are samPageArgs.
//
// The logs are keyed by their list order, (entity_id, action_date, id), and counted in buckets of
// consecutive logs (sam_log_buckets, see migration 0006). The page's newest log is the one with
// total - 1 - offset logs older than it. The bucket after the one holding it (nb) is the first
// whose below is past that rank: one probe of the buckets' (entity_id, below) index. The page is
// then read backwards from nb's start, skipping the logs between nb's start and the page's
// newest log: fewer than a bucket holds, whatever the page's depth. Without such a bucket the
// page is in the newest one and is read from the entity's newest log. The total is the newest
// bucket's below + n, one probe too. All of it is one statement, so that the total and the page
// agree even while an import lands; only a page past the end asks for the total on its own.
const samPageQuery = `
WITH t AS (` + samTotalQuery + `),
nb AS (SELECT start_date, start_id, below FROM sam_log_buckets
  WHERE entity_id = ? AND below >= (SELECT total FROM t) - ?
  ORDER BY below, start_date, start_id LIMIT 1)
SELECT (SELECT total FROM t), id, action, action_date, sam_id
FROM sam_action_logs
WHERE entity_id = ? AND (action_date, id) < (COALESCE((SELECT start_date FROM nb), ?), COALESCE((SELECT start_id FROM nb), ?))`

// samPageOrder orders and limits a page: newest first, skipping the logs newer than the page
// inside its stretch (the arguments of samPageLimitArgs).
const samPageOrder = `
ORDER BY action_date DESC, id DESC
LIMIT ? OFFSET COALESCE(? - (SELECT total FROM t) + COALESCE((SELECT below FROM nb), (SELECT total FROM t)), 0)`

// samTotalQuery is an entity's count of logs as one probe: its newest bucket's below + n. An
// emptied first bucket may share its below with the next one; the start breaks the tie.
const samTotalQuery = `SELECT below + n AS total FROM sam_log_buckets WHERE entity_id = ?
  ORDER BY below DESC, start_date DESC, start_id DESC LIMIT 1`

// samAfterAll is past the key of every log, (action_date, id): an id of 17 bytes sorts after
// every id of 16 at the largest date.
var samAfterAll = struct {
	date int64
	id   []byte
}{math.MaxInt64, column.AfterEveryUUID()}

// samPageArgs are samPageQuery's arguments.
func samPageArgs(key []byte, offset int64) []any {
	return []any{key, key, offset, key, samAfterAll.date, samAfterAll.id}
}

// samPageLimitArgs are samPageOrder's arguments.
func samPageLimitArgs(offset, size int64) []any { return []any{size, offset} }

// visibleEntity says, as one SQL condition, whether an id names a lead, merchant, deployment order,
// line item or equipment that the scope may see. Its parameters (visibleArgs) are, for each of the
// five kinds of entity, the id and twice the scope's partner ("" for staff). Equipment on no line
// item belongs to no partner: staff only.
const visibleEntity = `EXISTS (
SELECT 1 FROM leads WHERE id = ? AND (CAST(? AS TEXT) = '' OR partner_id = ?)
UNION ALL SELECT 1 FROM merchants WHERE id = ? AND (CAST(? AS TEXT) = '' OR partner_id = ?)
UNION ALL SELECT 1 FROM deployment_orders o JOIN merchants m ON m.id = o.merchant_id WHERE o.id = ? AND (CAST(? AS TEXT) = '' OR m.partner_id = ?)
UNION ALL SELECT 1 FROM line_items li JOIN deployment_orders o ON o.id = li.order_id JOIN merchants m ON m.id = o.merchant_id WHERE li.id = ? AND (CAST(? AS TEXT) = '' OR m.partner_id = ?)
UNION ALL SELECT 1 FROM equipment e
  LEFT JOIN line_items li ON li.equipment_id = e.id
  LEFT JOIN deployment_orders o ON o.id = li.order_id
  LEFT JOIN merchants m ON m.id = o.merchant_id
  WHERE e.id = ? AND (CAST(? AS TEXT) = '' OR m.partner_id = ?))`

// samVisiblePageQuery is a page of an entity's logs with their total, if the scope sees the
// entity: samPageArgs, visibleArgs, samPageLimitArgs.
const samVisiblePageQuery = samPageQuery + `
AND ` + visibleEntity + samPageOrder

// samTotalVisibleQuery is an entity's total, 0 without logs, and whether the scope sees it (1 or
// 0): the key, visibleArgs.
const samTotalVisibleQuery = `SELECT COALESCE((` + samTotalQuery + `), 0), CASE WHEN ` + visibleEntity + ` THEN 1 ELSE 0 END`

func visibleArgs(scope domain.Scope, id domain.ID) []any {
	p := string(scope.PartnerID)
	return []any{id, p, p, id, p, p, id, p, p, id, p, p, id, p, p}
}

// ListVisibleSAMActionLogs returns one page of an entity's logs, newest first (ties by id,
// descending), and the entity's total, checking in the same statement that the scope may see the
// entity; a page without logs takes a second statement. visible is false, with no logs, when the
// scope may not see the entity (or there is none). The visibility condition refers to no row of the page, so
// both engines evaluate it once, before the range scan.
//
// The page is cached for the scope's partner (see readCache): visibility is part of the answer.
func (s *Store) ListVisibleSAMActionLogs(ctx context.Context, scope domain.Scope, entity domain.ID, page, size int64) (logs []domain.SAMActionLog, total int64, visible bool, err error) {
	p, err := readCached(ctx, s, cacheKey{read: samPageRead, a: string(entity), b: string(scope.PartnerID), page: page, size: size},
		func(r cachedReader) (samPage, error) {
			return rereading(ctx, s, func() (samPage, error) {
				logs, total, visible, err := listVisibleSAMActionLogs(ctx, r, scope, entity, page, size)
				return samPage{logs, total, visible}, err
			})()
		}, copySAMPage)
	return p.logs, p.total, p.visible, err
}

// samPage is one answer of ListVisibleSAMActionLogs.
type samPage struct {
	logs    []domain.SAMActionLog
	total   int64
	visible bool
}

func copySAMPage(p samPage) samPage {
	p.logs = slices.Clone(p.logs)
	return p
}

func listVisibleSAMActionLogs(ctx context.Context, r cachedReader, scope domain.Scope, entity domain.ID, page, size int64) (logs []domain.SAMActionLog, total int64, visible bool, err error) {
	offset := sqltx.PageOffset(page, size)
	key := column.UUIDArg(entity)
	args := append(samPageArgs(key, offset), visibleArgs(scope, entity)...)
	rows, err := r.Query(ctx, samVisiblePageQuery, append(args, samPageLimitArgs(offset, size)...)...)
	if err != nil {
		return nil, 0, false, fmt.Errorf("store: SAM logs of %s: %w", entity, err)
	}
	defer rows.Close()
	logs = make([]domain.SAMActionLog, 0, size)
	for rows.Next() {
		l, t, err := scanSAMLog(rows, entity)
		if err != nil {
			return nil, 0, false, fmt.Errorf("store: SAM logs of %s: %w", entity, err)
		}
		total = t
		logs = append(logs, l)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, false, fmt.Errorf("store: SAM logs of %s: %w", entity, err)
	}
	if len(logs) > 0 {
		return logs, total, true, nil
	}
	// No page: past the end, an entity without logs, or one the scope may not see.
	var vis int64
	err = r.QueryRow(ctx, samTotalVisibleQuery, append([]any{key}, visibleArgs(scope, entity)...)...).Scan(&total, &vis)
	if err != nil {
		return nil, 0, false, fmt.Errorf("store: SAM logs of %s: %w", entity, err)
	}
	if vis == 0 {
		return nil, 0, false, nil
	}
	return logs, total, true, nil
}

// scanSAMLog reads a page's row: the entity's total, then the log's columns.
func scanSAMLog(rows *sqltx.Rows, entity domain.ID) (l domain.SAMActionLog, total int64, err error) {
	var id sql.RawBytes
	var date int64
	if err := rows.Scan(&total, &id, &l.Action, &date, &l.SamID); err != nil {
		return l, 0, err
	}
	if l.ID, err = column.IDOfUUID(id); err != nil {
		return l, 0, err
	}
	l.EntityID, l.ActionDate = entity, column.FromMicros(date)
	return l, total, nil
}
