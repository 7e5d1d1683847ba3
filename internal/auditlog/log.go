// Package auditlog is the audit trail: the writer that chains each event under the master key
// ring and grows the RFC 6962 tree in the same transaction, the genesis, the one verifier of the
// chain (ChainWalk), the checkpoint signer's follower and its memory of this process's commits,
// and the check of the trail's catalog. It runs on the store's pool (*sqltx.DB: its statements, its
// transactions as *sqltx.Tx) and its engine's features (Engine), and never imports the store, which builds it
// (New) and lets its own transactions append through it (Log.Chain). Package trail holds what
// needs no database: the leaves, the tile paths, the proofs.
package auditlog

import (
	"context"
	"database/sql"
	"errors"
	"sync/atomic"
	"time"

	"backoffice/internal/domain"
	"backoffice/internal/sqltx"
)

// Engine is what differs between the database engines, as far as the trail is concerned
// (internal/store's Engine has it all). It does not name the engine: the trail asks for what an
// engine does, never which one it is.
type Engine interface {
	// IsBusy tells a database locked by another writer past the busy timeout: the connection is
	// as good as before, and the write may be tried again.
	IsBusy(err error) bool
	// IsChainMoved tells the error of an append after a head that is no longer the chain's
	// (PostgreSQL's audit_chain_append_read; never on an engine without it).
	IsChainMoved(err error) bool
	// NotLanded tells the error of a one-statement append whose rows did not read back as they
	// were written (PostgreSQL's audit_chain_append_read), and gives the rows it read back, as
	// JSON; never on an engine without it.
	NotLanded(err error) (rows string, ok bool)
	// TypedArgs returns a statement's arguments to be sent in their types' binary form where the
	// driver would send text (PostgreSQL's audit columns as arrays, which the server would parse
	// back element by element).
	TypedArgs(args []any) []any
	// SingleWriter tells an engine that lets one writer in at a time.
	SingleWriter() bool
	// ArrayArgs tells an engine that takes a column of values as one array argument
	// (PostgreSQL's unnest): the audit trail's rows go in one statement of arrays.
	ArrayArgs() bool
	// AppendsAfterTip tells an engine whose migrations made the audit trail's one-statement
	// append after a head the caller knows (PostgreSQL's audit_chain_append).
	AppendsAfterTip() bool
	// DeferredTrailChecks tells an engine whose audit tables carry triggers deferred to the
	// commit (PostgreSQL's constraint triggers), which an append's read-back runs first.
	DeferredTrailChecks() bool
	// FailedStatementEndsTx tells an engine on which a failed statement leaves its transaction
	// unusable until it is rolled back (PostgreSQL): nothing more can be read in it.
	FailedStatementEndsTx() bool
	// SchemaVersion is the query that reads a number every change of the schema moves (SQLite's
	// schema version), "" on an engine without one: what an append's check of the audit trail's
	// catalog compares, where it has one.
	SchemaVersion() string
	// TrailCatalog is the query that reads the audit trail's catalog (its tables, what is attached
	// to them, the functions its writer calls), a row per object (kind, name, the table it is on,
	// its definition), and the lines the engine's migrations make of it, built into the binary
	// (CheckTrailCatalog).
	TrailCatalog() (query string, expected []byte)
}

// Pool is shared SQL run on the store's pool (*sqltx.DB), each error classified.
type Pool interface {
	runner
	// WriteRow is Exec for a write that answers one row, scanned into dest.
	WriteRow(ctx context.Context, query string, dest []any, args ...any) error
}

// runner is what a read or a write of the trail needs, on the pool or in a transaction
// (*sqltx.Tx), for the few queries run both ways.
type runner interface {
	Exec(ctx context.Context, query string, args ...any) (sql.Result, error)
	Query(ctx context.Context, query string, args ...any) (*sqltx.Rows, error)
	QueryRow(ctx context.Context, query string, args ...any) sqltx.Row
}

// Log is the audit trail of one database.
type Log struct {
	// db is the store's pool, and its transactions: the trail's reads and writes run on it.
	db     *sqltx.DB
	engine Engine
	audits auditWriter
	// withoutReadBack: audit appends read nothing back. Only the benchmark of what the read-back
	// costs sets it (export_test.go).
	withoutReadBack bool
	// withoutTrailGuard: audit appends check nothing of the trail's catalog (trailguard.go). Only
	// the benchmark of what the check costs sets it (export_test.go).
	withoutTrailGuard bool
	// memories are told what the audit writer commits, for the checkpoint signer (RememberCommits).
	memories commitMemories
	// signer makes the audit chain's links (SetChainSigner; read with chainSigner).
	signer atomic.Pointer[ChainSigner]
	// auditPrepared: the appends' statements are prepared on the pool (prepareAuditOnce).
	auditPrepared atomic.Bool
	// groups is told of each group the audit writer writes (ObserveGroups; nil: nobody).
	groups atomic.Pointer[GroupObserver]
	// trailHeld is what CheckTrailCatalog found of the audit trail's catalog that the migrations
	// do not make; while set, the chain links no event.
	trailHeld atomic.Pointer[TrailCatalogError]
	// trailClean is what the append's own check of the trail's catalog last found clean: SQLite's
	// schema version, PostgreSQL's writer's function row (trailguard.go).
	trailClean atomic.Pointer[string]
	// trailLines are the lines of the catalog the engine's migrations make (Engine.TrailCatalog),
	// split once (trailGuard).
	trailLines atomic.Pointer[[]string]
}

// New is the audit trail on the store's pool db, of engine e.
func New(db *sqltx.DB, e Engine) *Log {
	return &Log{db: db, engine: e}
}

// GroupObserver is told of each group of events the audit writer writes: how many, how long the
// write took, and whether it committed (serve's metrics).
type GroupObserver interface {
	ObserveAuditGroup(events int, took time.Duration, committed bool)
}

// ObserveGroups tells o of every group the audit writer writes from now on.
func (s *Log) ObserveGroups(o GroupObserver) {
	if o == nil {
		s.groups.Store(nil)
		return
	}
	s.groups.Store(&o)
}

// observeGroup tells the observer, if any, of a group written.
func (s *Log) observeGroup(events int, took time.Duration, err error) {
	if o := s.groups.Load(); o != nil {
		(*o).ObserveAuditGroup(events, took, err == nil)
	}
}

// Close stops the group writer; later events are refused.
func (s *Log) Close() { s.audits.stop() }

// The store's errors, as the trail's errors match them.
var (
	errUnavailable = domain.ErrUnavailable
	errNotFound    = domain.ErrNotFound
)

// noRows turns sql.ErrNoRows into the domain's not-found sentinel.
func noRows(err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return errNotFound
	}
	return err
}
