package store_test

import (
	"cmp"
	"time"

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
	partnerA       = testdb.PartnerA
	partnerB       = testdb.PartnerB
	staffUser      = testdb.StaffUser
	userA          = testdb.UserA
	planVisa       = testdb.PlanVisa
	planMC         = testdb.PlanMC
	planAmex       = testdb.PlanAmex
	leadA          = testdb.LeadA
	leadB          = testdb.LeadB
	leadNotSet     = testdb.LeadNotSet
	principalA     = testdb.PrincipalA
	principalNoSSN = testdb.PrincipalNoSSN
	principalB     = testdb.PrincipalB
	merchantA      = testdb.MerchantA
	merchantB      = testdb.MerchantB
	docA1          = testdb.DocA1
	docA2          = testdb.DocA2
	docB1          = testdb.DocB1
	orderA         = testdb.OrderA
	equipmentA     = testdb.EquipmentA
	equipmentLoose = testdb.EquipmentLoose
	itemA          = testdb.ItemA
	itemB          = testdb.ItemB
	fixtureNow     = testdb.FixtureNow()
)

// listOrder is the contract's order of SAM action logs: actionDate descending, then id
// descending.
func listOrder(a, b domain.SAMActionLog) int {
	return cmp.Or(b.ActionDate.Compare(a.ActionDate), cmp.Compare(b.ID, a.ID))
}
