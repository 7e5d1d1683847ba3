package store

import (
	"database/sql"

	"backoffice/internal/store/sqltx"
)

// stmtCache keeps one prepared statement per query text the pool runs outside transactions: the
// per-request reads (credentials, visibility, the SAM log page) would otherwise be parsed and
// planned on every call, which on SQLite is most of their cost (see sqltx.Stmts).
type stmtCache = sqltx.Stmts

func newStmtCache(db *sql.DB, keep bool) *stmtCache { return sqltx.NewStmts(db, keep) }
