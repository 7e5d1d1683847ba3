package dataset_test

import (
	"cmp"
	"slices"
	"time"

	"github.com/google/go-cmp/cmp/cmpopts"

	"backoffice/internal/dataset"
	"backoffice/internal/domain"
	"backoffice/internal/testdb"
)

// The shared fixture of internal/testdb, under the short names these tests use.

func id(n int) domain.ID        { return testdb.FixtureID(n) }
func fixture() *dataset.Dataset { return testdb.Fixture() }
func samLog(n int, entity domain.ID, at time.Time) domain.SAMActionLog {
	return testdb.FixtureSAMLog(n, entity, at)
}

const (
	staffKey       = testdb.StaffKey
	partnerKey     = testdb.PartnerKey
	expiredKey     = testdb.ExpiredKey
	staffSession   = testdb.StaffSession
	expiredSession = testdb.ExpiredSession
	principalSSN   = testdb.PrincipalSSN
	otherSSN       = testdb.OtherSSN
)

// Variables, so that tests can take their addresses.
var (
	partnerA    = testdb.PartnerA
	partnerB    = testdb.PartnerB
	staffUser   = testdb.StaffUser
	planVisa    = testdb.PlanVisa
	planMC      = testdb.PlanMC
	planAmex    = testdb.PlanAmex
	leadA       = testdb.LeadA
	leadB       = testdb.LeadB
	leadNotSet  = testdb.LeadNotSet
	principalB  = testdb.PrincipalB
	merchantA   = testdb.MerchantA
	merchantB   = testdb.MerchantB
	docA1       = testdb.DocA1
	docB1       = testdb.DocB1
	pinPadModel = testdb.PinPadModel
	equipmentA  = testdb.EquipmentA
	itemA       = testdb.ItemA
	itemB       = testdb.ItemB
	varsheetA   = testdb.VarsheetA
	fixtureNow  = testdb.FixtureNow()
)

// asExported is what an export of ds alone gives back: no credentials, SSNs only with a ring,
// SAM logs by entity and list order, notes and audit events by time then id.
func asExported(ds *dataset.Dataset, withSSNs bool) *dataset.Dataset {
	out := *ds
	out.APIKeys, out.Sessions = nil, nil
	out.Principals = slices.Clone(ds.Principals)
	if !withSSNs {
		for i := range out.Principals {
			out.Principals[i].SSN = nil
		}
	}
	out.SAMActionLogs = slices.Clone(ds.SAMActionLogs)
	slices.SortFunc(out.SAMActionLogs, func(a, b domain.SAMActionLog) int {
		return cmp.Or(cmp.Compare(a.EntityID, b.EntityID), listOrder(a, b))
	})
	out.MerchantNotes = slices.Clone(ds.MerchantNotes)
	slices.SortFunc(out.MerchantNotes, func(a, b domain.MerchantNote) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	// Imported without their place in the audit chain, events are chained in file order under the
	// test key; their links are checked by verifying the chain, not here (see ignoreLinks).
	out.AuditEvents = slices.Clone(ds.AuditEvents)
	for i := range out.AuditEvents {
		if out.AuditEvents[i].Seq == 0 {
			out.AuditEvents[i].Seq, out.AuditEvents[i].ChainKeyID = int64(i+1), testdb.DefaultKeyID
		}
	}
	return &out
}

// ignoreLinks leaves audit events' links out of a comparison with a fixture, which cannot know them.
var ignoreLinks = cmpopts.IgnoreFields(domain.AuditEvent{}, "Hash")

// listOrder is the contract's order of SAM action logs: actionDate descending, then id
// descending.
func listOrder(a, b domain.SAMActionLog) int {
	return cmp.Or(b.ActionDate.Compare(a.ActionDate), cmp.Compare(b.ID, a.ID))
}
func ptr[T any](v T) *T { return &v }
