package auditlog_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"backoffice/internal/dataset"
	"backoffice/internal/domain"
	"backoffice/internal/secrets"
	"backoffice/internal/store"
	"backoffice/internal/testdb"
)

// The shared fixture of internal/testdb under the short names the store's tests use, and the
// store's test helpers these tests share with them (internal/store's fixture_test.go and
// credentials_test.go).

var ctx = context.Background()

func id(n int) domain.ID    { return testdb.FixtureID(n) }
func samID(n int) domain.ID { return testdb.SAMID(n) }

var (
	staffUser  = testdb.StaffUser
	userA      = testdb.UserA
	principalA = testdb.PrincipalA
	fixtureNow = testdb.FixtureNow()
)

var (
	partnerID = domain.ID("00000000-0000-4000-8000-000000000001")
	staffID   = domain.ID("00000000-0000-4000-8000-000000000101")
	leadID    = domain.ID("00000000-0000-4000-8000-000000000301")
	importKey = "imported-key-from-a-dataset-file"
)

func principalID(i int) domain.ID {
	return domain.ID(fmt.Sprintf("00000000-0000-4000-8000-%012d", 100000+i))
}

func ssnOf(i int) string { return fmt.Sprintf("%03d-%02d-%04d", i%1000, i%100, i) }

// seed imports a staff user with an imported API key, and n principals with SSNs sealed under ring.
func seed(t *testing.T, st *store.Store, ring *secrets.Ring, n int) {
	t.Helper()
	ds := &dataset.Dataset{
		Partners: []domain.Partner{{ID: partnerID, Name: "P"}},
		Users:    []domain.User{{ID: staffID, Email: "ops@example.com", Permissions: []domain.Permission{domain.PermAll}}},
		APIKeys:  []domain.APIKey{{ID: domain.ID("00000000-0000-4000-8000-000000000111"), UserID: staffID, Key: importKey}},
		Leads:    []domain.Lead{{ID: leadID, PartnerID: partnerID, BusinessName: "L"}},
	}
	for i := range n {
		ssn := ssnOf(i)
		ds.Principals = append(ds.Principals, domain.Principal{ID: principalID(i), LeadID: leadID, FirstName: "F", LastName: "L", SSN: &ssn})
	}
	if _, err := dataset.Import(context.Background(), st, ds, ring); err != nil {
		t.Fatal(err)
	}
}

func event(action string, target domain.ID) domain.AuditEvent {
	return domain.AuditEvent{At: time.Now(), ActorUserID: domain.SystemActorID, Action: action, TargetID: string(target), Outcome: domain.OutcomeGranted}
}
