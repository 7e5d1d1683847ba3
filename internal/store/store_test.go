package store_test

// The one store test suite: every test runs against SQLite, and against PostgreSQL when
// BACKOFFICE_TEST_POSTGRES_URL is set, each on a fresh database, so that both engines are held to
// the same behaviour.

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"backoffice/internal/dataset"
	"backoffice/internal/domain"
	"backoffice/internal/secrets"
	"backoffice/internal/store"
	"backoffice/internal/testdb"
)

var ctx = context.Background()

func TestMigrationsAreIdempotent(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		for range 2 {
			if err := st.Migrate(ctx); err != nil {
				t.Fatalf("migrate again: %v", err)
			}
		}
		if n, err := st.Pending(ctx); err != nil || n != 0 {
			t.Fatalf("pending = %d, %v; want 0", n, err)
		}
		testdb.Import(t, st, fixture())
	})
}

// TestConcurrentMigrationsMigrateOnce starts several stores on one fresh database at the same
// moment, as replicas starting together do: every Migrate succeeds (a second application of a
// migration would fail on its CREATE TABLE) and every migration is recorded.
func TestConcurrentMigrationsMigrateOnce(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			url := testdb.URL(t, engine)
			stores := make([]*store.Store, 4)
			for i := range stores {
				st, err := store.Open(ctx, url)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { st.Close() })
				st.SetChainSigner(testdb.Ring(t))
				stores[i] = st
			}
			errs := make([]error, len(stores))
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i, st := range stores {
				wg.Go(func() {
					<-start
					errs[i] = st.Migrate(ctx)
				})
			}
			close(start)
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Errorf("migrate %d: %v", i, err)
				}
			}
			for i, st := range stores {
				if n, err := st.Pending(ctx); err != nil || n != 0 {
					t.Errorf("store %d: pending = %d, %v; want 0", i, n, err)
				}
			}
			testdb.Import(t, stores[0], fixture())
		})
	}
}

// TestSAMLogPages walks an entity's logs page by page after two imports whose dates interleave,
// and checks every page against the contract's order computed here.
func TestSAMLogPages(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		testdb.Import(t, st, fixture())
		entity := merchantB
		var all []domain.SAMActionLog
		first := &dataset.Dataset{}
		for i := range 37 {
			// Every other hour, with pairs of equal dates so that ties fall to the id.
			first.SAMActionLogs = append(first.SAMActionLogs, samLog(20000+i*2, entity, fixtureNow.Add(-time.Duration(i/2*2)*time.Hour)))
		}
		testdb.Import(t, st, first)
		all = append(all, first.SAMActionLogs...)
		checkPages(t, st, entity, all, 7)

		second := &dataset.Dataset{}
		for i := range 25 {
			// Odd hours between the first import's, and some on its dates with ids on either side.
			at := fixtureNow.Add(-time.Duration(i*2+1) * time.Hour)
			if i%5 == 0 {
				at = fixtureNow.Add(-time.Duration(i*2) * time.Hour)
			}
			second.SAMActionLogs = append(second.SAMActionLogs, samLog(20000+i*2+1+(i%3)*1000, entity, at))
		}
		testdb.Import(t, st, second)
		all = append(all, second.SAMActionLogs...)
		checkPages(t, st, entity, all, 7)
		checkPages(t, st, entity, all, 100)

		var leadALogs []domain.SAMActionLog
		for _, l := range fixture().SAMActionLogs {
			if l.EntityID == leadA {
				leadALogs = append(leadALogs, l)
			}
		}
		checkPages(t, st, leadA, leadALogs, 2)

		if logs, total, err := store.ListSAMActionLogs(ctx, st, entity, 1_000_000_000_000_000, 100); err != nil || len(logs) != 0 || total != int64(len(all)) {
			t.Errorf("huge page: %d logs, total %d, %v; want none, total %d", len(logs), total, err, len(all))
		}
		if logs, total, err := store.ListSAMActionLogs(ctx, st, id(777), 1, 10); err != nil || len(logs) != 0 || total != 0 {
			t.Errorf("entity without logs: %v, %d, %v", logs, total, err)
		}
	})
}

// checkPages walks every page of size, one past the end, and compares each with the expected
// slice of want in list order.
func checkPages(t *testing.T, st *store.Store, entity domain.ID, want []domain.SAMActionLog, size int64) {
	t.Helper()
	want = slices.Clone(want)
	slices.SortFunc(want, listOrder)
	pages := (int64(len(want)) + size - 1) / size
	for page := int64(1); page <= pages+1; page++ {
		got, total, err := store.ListSAMActionLogs(ctx, st, entity, page, size)
		if err != nil {
			t.Fatalf("page %d: %v", page, err)
		}
		if total != int64(len(want)) {
			t.Errorf("page %d: total = %d, want %d", page, total, len(want))
		}
		from, to := min((page-1)*size, int64(len(want))), min(page*size, int64(len(want)))
		if diff := cmp.Diff(want[from:to], got, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("page %d of size %d (-want +got):\n%s", page, size, diff)
		}
	}
}

// Who may list an entity's SAM logs: staff any entity, a partner only its own leads, merchants,
// deployment orders, line items and the equipment on them; nobody an id that names no entity.
// The answer holds on a page with logs and past the end (where the statement differs), and a
// visible entity's page is the one staff get.
func TestEntityVisible(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		testdb.Import(t, st, fixture())
		staff, a, b := domain.Scope{}, domain.Scope{PartnerID: partnerA}, domain.Scope{PartnerID: partnerB}
		cases := []struct {
			name        string
			id          domain.ID
			staff, a, b bool
		}{
			{"lead", leadA, true, true, false},
			{"merchant", merchantA, true, true, false},
			{"deployment order", orderA, true, true, false},
			{"line item", itemA, true, true, false},
			{"equipment on a line item", equipmentA, true, true, false},
			{"another partner's lead", leadB, true, false, true},
			{"equipment on no line item", equipmentLoose, true, false, false},
			{"unknown", id(999999), false, false, false},
			{"a record that is no entity", docA1, false, false, false},
		}
		for _, c := range cases {
			for _, s := range []struct {
				scope domain.Scope
				want  bool
			}{{staff, c.staff}, {a, c.a}, {b, c.b}} {
				for _, page := range []int64{1, 1 << 40} {
					logs, total, visible, err := st.ListVisibleSAMActionLogs(ctx, s.scope, c.id, page, 10)
					if err != nil || visible != s.want {
						t.Errorf("%s to %+v, page %d: visible %v, %v; want %v", c.name, s.scope, page, visible, err, s.want)
						continue
					}
					wantLogs, wantTotal, err := store.ListSAMActionLogs(ctx, st, c.id, page, 10)
					if err != nil {
						t.Fatal(err)
					}
					if !visible {
						wantLogs, wantTotal = nil, 0
					}
					if diff := cmp.Diff(wantLogs, logs, cmpopts.EquateEmpty()); diff != "" || total != wantTotal {
						t.Errorf("%s to %+v, page %d: total %d, want %d; logs (-want +got):\n%s", c.name, s.scope, page, total, wantTotal, diff)
					}
				}
			}
		}
	})
}

func TestServiceAcceptance(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		testdb.Import(t, st, fixture())
		plans := func(visa, mc, amex bool) []domain.CardPlanSelection {
			return []domain.CardPlanSelection{
				{CardPlan: domain.CardPlan{ID: planMC, Code: "mastercard", DisplayName: "Mastercard", SortOrder: 1}, Selected: mc},
				{CardPlan: domain.CardPlan{ID: planVisa, Code: "visa", DisplayName: "Visa", SortOrder: 2}, Selected: visa},
				{CardPlan: domain.CardPlan{ID: planAmex, Code: "amex", DisplayName: "American Express", SortOrder: 3}, Selected: amex},
			}
		}
		cases := []struct {
			name  string
			scope domain.Scope
			lead  domain.ID
			want  domain.ServiceAcceptance
		}{
			{"configured", domain.Scope{PartnerID: partnerA}, leadA, domain.ServiceAcceptance{MidID: ptr(id(3001)), Configured: true, CardPlans: plans(true, false, true),
				EBTFcsNumber: ptr("1234567"), AmexProgram: ptr("opt_blue"), AmexEsaNumber: ptr("ESA-1"), EBTBenefitMode: ptr("both")}},
			{"none stored", domain.Scope{}, leadB, domain.ServiceAcceptance{CardPlans: plans(false, false, false)}},
			{"stored, not configured", domain.Scope{}, leadNotSet, domain.ServiceAcceptance{MidID: ptr(id(3003)), CardPlans: plans(false, false, false)}},
		}
		for _, c := range cases {
			got, err := st.ServiceAcceptance(ctx, c.scope, c.lead)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", c.name, diff)
			}
		}
		for _, c := range []struct {
			scope domain.Scope
			lead  domain.ID
		}{{domain.Scope{PartnerID: partnerB}, leadA}, {domain.Scope{}, id(399)}} {
			if _, err := st.ServiceAcceptance(ctx, c.scope, c.lead); !errors.Is(err, domain.ErrNotFound) {
				t.Errorf("lead %s to %+v: %v, want not found", c.lead, c.scope, err)
			}
		}
	})
}

func TestPrincipalSSN(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		testdb.Import(t, st, fixture())
		ring := testdb.Ring(t)
		sealed, err := st.PrincipalSSN(ctx, domain.Scope{PartnerID: partnerA}, leadA, principalA)
		if err != nil || !sealed.Found {
			t.Fatalf("PrincipalSSN = %+v, %v", sealed, err)
		}
		if strings.Contains(string(sealed.Sealed), principalSSN) {
			t.Error("the SSN is stored in plaintext")
		}
		plain, err := ring.Open(sealed.KeyID, sealed.Sealed, secrets.PrincipalAAD(string(principalA), "ssn"))
		if err != nil || string(plain) != principalSSN {
			t.Errorf("opened %q, %v; want %q", plain, err, principalSSN)
		}
		// Sealed for one principal, it does not open as another's.
		if _, err := ring.Open(sealed.KeyID, sealed.Sealed, secrets.PrincipalAAD(string(principalB), "ssn")); err == nil {
			t.Error("the SSN opens bound to another principal")
		}
		if none, err := st.PrincipalSSN(ctx, domain.Scope{}, leadA, principalNoSSN); err != nil || none.Found {
			t.Errorf("principal without SSN = %+v, %v; want not found on file", none, err)
		}
		for _, c := range []struct {
			name            string
			scope           domain.Scope
			lead, principal domain.ID
		}{
			{"another partner's", domain.Scope{PartnerID: partnerB}, leadA, principalA},
			{"under another lead", domain.Scope{}, leadB, principalA},
			{"unknown", domain.Scope{}, leadA, id(499)},
		} {
			if _, err := st.PrincipalSSN(ctx, c.scope, c.lead, c.principal); !errors.Is(err, domain.ErrNotFound) {
				t.Errorf("%s: %v, want not found", c.name, err)
			}
		}
	})
}

func TestDeleteMerchantDocument(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		testdb.Import(t, st, fixture())
		event := func(n int) domain.AuditEvent {
			return domain.AuditEvent{ID: id(n), At: fixtureNow, ActorUserID: userA, Action: "merchant_document.delete", TargetID: string(docA1), Detail: "test"}
		}
		scopeA := domain.Scope{PartnerID: partnerA}

		// The audit event cannot be stored (its id is taken): the deletion is rolled back with it.
		taken := event(1601)
		if err := st.DeleteMerchantDocument(ctx, scopeA, merchantA, docA1, taken); err == nil {
			t.Fatal("delete succeeded although its audit event could not be written")
		}
		if !hasDocument(t, st, docA1) {
			t.Fatal("the document is gone although its audit event was not written")
		}

		if err := st.DeleteMerchantDocument(ctx, scopeA, merchantA, docA1, event(9101)); err != nil {
			t.Fatalf("delete: %v", err)
		}
		refused := []struct {
			name     string
			scope    domain.Scope
			merchant domain.ID
			doc      domain.ID
		}{
			{"second delete", scopeA, merchantA, docA1},
			{"another merchant's document", scopeA, merchantA, docB1},
			{"another partner's merchant", domain.Scope{PartnerID: partnerB}, merchantA, docA2},
			{"unknown merchant", domain.Scope{}, id(598), docA2},
		}
		for i, c := range refused {
			if err := st.DeleteMerchantDocument(ctx, c.scope, c.merchant, c.doc, event(9102+i)); !errors.Is(err, domain.ErrNotFound) {
				t.Errorf("%s: %v, want not found", c.name, err)
			}
		}
		if hasDocument(t, st, docA1) || !hasDocument(t, st, docA2) || !hasDocument(t, st, docB1) {
			t.Error("documents after the deletes: want only " + string(docA1) + " gone")
		}
		outcomes := map[domain.ID]string{}
		for _, e := range testdb.Export(t, st, nil).AuditEvents {
			outcomes[e.ID] = e.Outcome
		}
		want := map[domain.ID]string{id(1601): domain.OutcomeGranted, id(9101): domain.OutcomeGranted,
			id(9102): domain.OutcomeNotFound, id(9103): domain.OutcomeNotFound, id(9104): domain.OutcomeNotFound, id(9105): domain.OutcomeNotFound}
		if diff := cmp.Diff(want, outcomes); diff != "" {
			t.Errorf("audit outcomes (-want +got):\n%s", diff)
		}
	})
}

func hasDocument(t *testing.T, st *store.Store, doc domain.ID) bool {
	t.Helper()
	for _, d := range testdb.Export(t, st, nil).MerchantDocuments {
		if d.ID == doc {
			return true
		}
	}
	return false
}

func TestPushLeaseAndNotes(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		testdb.Import(t, st, fixture())
		now := fixtureNow
		acquire := func(holder string, want bool) {
			t.Helper()
			got, err := st.AcquirePushLease(ctx, itemA, holder, now, time.Minute)
			if err != nil || got != want {
				t.Fatalf("acquire by %s = %v, %v; want %v", holder, got, err, want)
			}
		}
		acquire("first", true)
		acquire("second", false)
		if got, err := st.AcquirePushLease(ctx, itemB, "second", now, time.Minute); err != nil || !got {
			t.Fatalf("a lease on another line item = %v, %v", got, err)
		}
		now = now.Add(time.Minute) // the first lease has expired: it is taken over
		acquire("third", true)
		if err := st.ReleasePushLease(ctx, itemA, "first"); err != nil {
			t.Fatal(err)
		}
		acquire("fourth", false) // the old holder's release did not free the new holder's lease
		if err := st.ReleasePushLease(ctx, itemA, "third"); err != nil {
			t.Fatal(err)
		}
		acquire("fourth", true)

		note := domain.MerchantNote{MerchantID: merchantA, Body: "pushed", CreatedAt: now, CreatedBy: userA}
		if err := store.AddMerchantNote(ctx, st, note); err != nil {
			t.Fatal(err)
		}
		notes := testdb.Export(t, st, nil).MerchantNotes
		if len(notes) != 2 || notes[1].Body != "pushed" || !notes[1].CreatedAt.Equal(now) || notes[1].ID == "" {
			t.Errorf("notes = %+v", notes)
		}
	})
}

func TestCredentialRule(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		testdb.Import(t, st, fixture())
		clock := func() time.Time { return fixtureNow }
		staff := domain.Actor{UserID: staffUser, Permissions: []domain.Permission{domain.PermAll}}
		partner := domain.Actor{UserID: userA, PartnerID: partnerA, Permissions: []domain.Permission{domain.PermReadSAMActionLogs, domain.PermDecryptPrincipals}}
		cases := []struct {
			name         string
			kind, secret string
			want         *domain.Actor // nil: not found
		}{
			{"api key without expiry", domain.CredentialAPIKey, staffKey, &staff},
			{"api key not yet expired", domain.CredentialAPIKey, partnerKey, &partner},
			{"expired api key", domain.CredentialAPIKey, expiredKey, nil},
			{"session", domain.CredentialSession, staffSession, &staff},
			{"expired session", domain.CredentialSession, expiredSession, nil},
			{"api key sent as a session", domain.CredentialSession, staffKey, nil},
			{"session sent as an api key", domain.CredentialAPIKey, staffSession, nil},
			{"unknown", domain.CredentialAPIKey, "unknown-key-00000000000001", nil},
			{"api key of a disabled user", domain.CredentialAPIKey, testdb.DisabledKey, nil},
			{"session of a disabled user", domain.CredentialSession, testdb.DisabledToken, nil},
		}
		for _, c := range cases {
			got, err := actorAt(st, clock, c.kind, c.secret)
			if c.want == nil {
				if !errors.Is(err, domain.ErrNotFound) {
					t.Errorf("%s: %+v, %v; want not found", c.name, got, err)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
				continue
			}
			if diff := cmp.Diff(*c.want, got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", c.name, diff)
			}
		}
		// The key expires at its instant, not after it.
		clock = func() time.Time { return fixtureNow.Add(24 * time.Hour) }
		if _, err := actorAt(st, clock, domain.CredentialAPIKey, partnerKey); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("api key at its expiry: %v, want not found", err)
		}
	})
}

// TestAccount reads the user an access token names, by id or by external id, as stored: whether
// the user may act (not disabled) is auth's rule, checked on what this returns.
func TestAccount(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		testdb.Import(t, st, fixture())
		partner := domain.Account{Actor: domain.Actor{UserID: userA, PartnerID: partnerA, Permissions: []domain.Permission{domain.PermReadSAMActionLogs, domain.PermDecryptPrincipals}}}
		disabled := domain.Account{Actor: domain.Actor{UserID: testdb.DisabledUser, Permissions: []domain.Permission{domain.PermAll}}, Disabled: true}
		for _, c := range []struct {
			name string
			ref  domain.UserRef
			want *domain.Account // nil: not found
		}{
			{"by id", domain.UserRef{Key: domain.UserKeyID, Value: string(userA)}, &partner},
			{"disabled, by id", domain.UserRef{Key: domain.UserKeyID, Value: string(testdb.DisabledUser)}, &disabled},
			{"disabled, by external id", domain.UserRef{Key: domain.UserKeyExternalID, Value: testdb.DisabledExternalID}, &disabled},
			{"external id in another case", domain.UserRef{Key: domain.UserKeyExternalID, Value: strings.ToUpper(testdb.DisabledExternalID)}, nil},
			{"an id as an external id", domain.UserRef{Key: domain.UserKeyExternalID, Value: string(userA)}, nil},
			{"an external id as an id", domain.UserRef{Key: domain.UserKeyID, Value: testdb.DisabledExternalID}, nil},
			{"unknown id", domain.UserRef{Key: domain.UserKeyID, Value: string(id(199))}, nil},
		} {
			for range 2 { // read, then from the cache
				got, err := st.Account(ctx, c.ref)
				if c.want == nil {
					if !errors.Is(err, domain.ErrNotFound) {
						t.Errorf("%s: %+v, %v; want not found", c.name, got, err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
				if diff := cmp.Diff(*c.want, got); diff != "" {
					t.Errorf("%s (-want +got):\n%s", c.name, diff)
				}
			}
		}
	})
}

// TestLostDatabaseIsUnavailable cuts the connection to the server under a running store: every
// operation fails with ErrUnavailable (not a plain error a caller would answer 500 to), and the
// same store works again once the server is reachable. PostgreSQL only: an embedded database
// has no connection to lose.
func TestLostDatabaseIsUnavailable(t *testing.T) {
	url, proxy := testdb.ViaProxy(t, testdb.URL(t, "postgres"))
	st, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	st.SetChainSigner(testdb.Ring(t))
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	testdb.Import(t, st, fixture())
	operations := map[string]func() error{
		"list": func() error {
			_, _, _, err := st.ListVisibleSAMActionLogs(ctx, domain.Scope{PartnerID: partnerA}, leadA, 1, 10)
			return err
		},
		"credential": func() error {
			_, err := actor(st, domain.CredentialAPIKey, staffKey)
			return err
		},
		"delete (a transaction)": func() error {
			err := st.DeleteMerchantDocument(ctx, domain.Scope{}, merchantB, id(699), domain.AuditEvent{At: fixtureNow, ActorUserID: staffUser})
			if errors.Is(err, domain.ErrNotFound) {
				return nil
			}
			return err
		},
		"ping": func() error { return st.Ping(ctx) },
	}
	for name, op := range operations {
		if err := op(); err != nil {
			t.Fatalf("%s before the cut: %v", name, err)
		}
	}
	proxy.Cut()
	for name, op := range operations {
		if err := op(); !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("%s with the database lost: %v, want ErrUnavailable", name, err)
		}
	}
	proxy.Restore()
	for name, op := range operations {
		if err := op(); err != nil {
			t.Errorf("%s after the database returned: %v", name, err)
		}
	}
}

// The write probe of /readyz fails while the database refuses writes (read-only), and passes
// again once it takes them.
func TestWritableFollowsTheDatabase(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		if err := st.Writable(ctx); err != nil {
			t.Fatalf("write probe: %v", err)
		}
		store.RefuseWrites(t, st, true)
		if err := st.Writable(ctx); !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("write probe on a read-only database: %v, want ErrUnavailable", err)
		}
		store.RefuseWrites(t, st, false)
		if err := st.Writable(ctx); err != nil {
			t.Errorf("write probe once writes are taken again: %v", err)
		}
	})
}
