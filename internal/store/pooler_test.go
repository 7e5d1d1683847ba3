package store_test

import (
	"testing"

	"backoffice/internal/domain"
	"backoffice/internal/store"
	"backoffice/internal/testdb"
)

// TestNoSessionStateOnPostgres runs the store's kinds of work (migrations, an import, the
// per-request reads, a disclosure's audit event, a transaction that writes, the write probe) on
// one PostgreSQL connection, then looks at that session: it must hold nothing a later
// transaction could need, no prepared statement, advisory lock, setting or temporary table.
// That is what lets a transaction-mode pooler (PgBouncer) give each transaction whichever server
// connection is free.
func TestNoSessionStateOnPostgres(t *testing.T) {
	pool := store.DefaultPool()
	pool.MaxOpenConns, pool.MaxIdleConns = 1, 1 // one session throughout
	st := testdb.OpenURL(t, testdb.URL(t, "postgres"), store.WithPool(pool))
	testdb.Import(t, st, fixture())
	staff := domain.Scope{}
	work := map[string]func() error{
		"list": func() error {
			_, _, _, err := st.ListVisibleSAMActionLogs(ctx, staff, leadA, 1, 10)
			return err
		},
		"credential": func() error {
			_, err := actor(st, domain.CredentialAPIKey, staffKey)
			return err
		},
		"acceptance": func() error {
			_, err := st.ServiceAcceptance(ctx, staff, leadA)
			return err
		},
		"decrypt": func() error {
			if _, err := st.PrincipalSSN(ctx, staff, leadA, principalA); err != nil {
				return err
			}
			return st.RecordAudit(ctx, domain.AuditEvent{At: fixtureNow, ActorUserID: staffUser, Action: "ssn.decrypt", TargetID: string(principalA), Outcome: "success"})
		},
		"delete": func() error {
			return st.DeleteMerchantDocument(ctx, staff, merchantB, docB1, domain.AuditEvent{At: fixtureNow, ActorUserID: staffUser})
		},
		"write probe": func() error { return st.Writable(ctx) },
	}
	for name, do := range work {
		if err := do(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	left := map[string]string{
		"prepared statements": `SELECT count(*) FROM pg_prepared_statements`,
		"advisory locks":      `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()`,
		"session settings":    `SELECT count(*) FROM pg_settings WHERE source = 'session'`,
		"temporary tables":    `SELECT count(*) FROM pg_class WHERE relpersistence = 't'`,
	}
	for what, query := range left {
		var n int
		if err := store.DB(st).QueryRowContext(ctx, query).Scan(&n); err != nil || n != 0 {
			t.Errorf("%s left on the session: %d, %v; want none", what, n, err)
		}
	}
}

// TestLostConnectionsAreReplaced ends the server processes under a store's idle connections
// (as a failover or pg_terminate_backend does) right after using them, so that the pool hands
// them out again as they are: a read runs again on a fresh connection, and so does a transaction
// whose BEGIN met a dead one, so neither fails. Directly and through PgBouncer.
func TestLostConnectionsAreReplaced(t *testing.T) {
	for _, engine := range testdb.PostgresEngines() {
		t.Run(engine, func(t *testing.T) {
			url := testdb.URL(t, engine)
			st := testdb.OpenURL(t, url)
			testdb.Import(t, st, fixture())
			staff := domain.Scope{}
			read := func() error {
				_, err := st.ServiceAcceptance(ctx, staff, leadA)
				return err
			}
			write := func() error {
				return st.RecordAudit(ctx, domain.AuditEvent{At: fixtureNow, ActorUserID: staffUser, Action: "ssn.decrypt", TargetID: string(principalA), Outcome: "success"})
			}
			for _, op := range []struct {
				name string
				do   func() error
			}{{"transaction", write}, {"read", read}} {
				if err := op.do(); err != nil {
					t.Fatalf("%s before: %v", op.name, err)
				}
				testdb.TerminateBackends(t, url)
				if err := op.do(); err != nil {
					t.Errorf("%s after its connection was lost: %v", op.name, err)
				}
			}
		})
	}
}
