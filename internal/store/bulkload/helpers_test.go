package bulkload_test

import (
	"context"
	"time"

	"backoffice/internal/dataset"
	"backoffice/internal/domain"
	"backoffice/internal/store"
	"backoffice/internal/testdb"
)

// The helpers this package's tests share with the store's (internal/store/samlogs_test.go).

var ctx = context.Background()

func fixture() *dataset.Dataset { return testdb.Fixture() }
func samBase() *dataset.Dataset { return testdb.SAMBase() }
func logs(entity domain.ID, first, n int) []domain.SAMActionLog {
	return testdb.SAMLogs(entity, first, n)
}
func bucketLogs(entity domain.ID, first, n int) []domain.SAMActionLog {
	return testdb.ScrambledSAMLogs(entity, first, n)
}
func samLog(n int, entity domain.ID, at time.Time) domain.SAMActionLog {
	return testdb.FixtureSAMLog(n, entity, at)
}

var (
	partnerA   = testdb.PartnerA
	partnerB   = testdb.PartnerB
	merchantB  = testdb.MerchantB
	fixtureNow = testdb.FixtureNow()
)

// listSAMActionLogs is a page of the entity's logs as staff see it.
func listSAMActionLogs(st *store.Store, entity domain.ID, page, size int64) ([]domain.SAMActionLog, int64, error) {
	logs, total, _, err := st.ListVisibleSAMActionLogs(ctx, domain.Scope{}, entity, page, size)
	return logs, total, err
}
