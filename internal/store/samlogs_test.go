package store_test

// Helpers for tests of SAM action logs: logs of a partner's leads and their pages.

import (
	"testing"

	"backoffice/internal/dataset"
	"backoffice/internal/domain"
	"backoffice/internal/store"
	"backoffice/internal/testdb"
)

// The SAM log helpers of internal/testdb, under the short names these tests use.

func samBase() *dataset.Dataset { return testdb.SAMBase() }
func logs(entity domain.ID, first, n int) []domain.SAMActionLog {
	return testdb.SAMLogs(entity, first, n)
}
func idsInListOrder(ls []domain.SAMActionLog) []domain.ID { return testdb.IDsInListOrder(ls) }
func bucketLogs(entity domain.ID, first, n int) []domain.SAMActionLog {
	return testdb.ScrambledSAMLogs(entity, first, n)
}
func checkSAMLogs(t *testing.T, st *store.Store, entity domain.ID, want []domain.SAMActionLog) []int64 {
	t.Helper()
	return testdb.CheckSAMLogs(t, st, entity, want)
}
func walk(t *testing.T, st *store.Store, entity domain.ID, size int64) ([]domain.ID, int64) {
	return testdb.WalkSAMPages(t, st, entity, size)
}
