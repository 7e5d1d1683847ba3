package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"

	"backoffice/internal/column"
	"backoffice/internal/domain"
	"backoffice/internal/sqltx"
)

// ListVisibleSAMActionLogs returns one page of an entity's logs, newest first (ties by id,
// descending), and the entity's total, checking in the same statement that the scope may see the
// entity; a page without logs takes a second statement. visible is false, with no logs, when the
// scope may not see the entity (or there is none). The visibility condition refers to no row of the page, so
// both engines evaluate it once, before the range scan.
//
// The page is cached for the scope's partner (see readCache): visibility is part of the answer.
func (s *Store) ListVisibleSAMActionLogs(ctx context.Context, scope domain.Scope, entity domain.ID, page, size int64) (logs []domain.SAMActionLog, total int64, visible bool, err error) {
	p, err := readCached(ctx, s.cache, s.pool, cacheKey{read: samPageRead, a: string(entity), b: string(scope.PartnerID), page: page, size: size},
		func(r cachedReader) (samPage, error) {
			return rereading(ctx, s.pool, func() (samPage, error) {
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
