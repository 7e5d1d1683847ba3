package testdb

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"backoffice/internal/dataset"
	"backoffice/internal/domain"
	"backoffice/internal/store"
	"backoffice/internal/store/bulkload"
)

// Helpers for the tests of SAM action logs (the store's and the dataset's): logs of a partner's
// leads and their pages.

// SAMID makes the ids of the SAM log tests, apart from the fixture's.
func SAMID(n int) domain.ID { return domain.ID(fmt.Sprintf("00000000-0000-4000-9000-%012d", n)) }

// SAMBase is a partner with two leads to hang logs on.
func SAMBase() *dataset.Dataset {
	p := SAMID(900001)
	return &dataset.Dataset{
		Partners: []domain.Partner{{ID: p, Name: "P"}},
		Leads: []domain.Lead{
			{ID: SAMID(900002), PartnerID: p, BusinessName: "L1"},
			{ID: SAMID(900003), PartnerID: p, BusinessName: "L2"},
		},
	}
}

// SAMT0 is when the SAM log tests' logs begin.
func SAMT0() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }

// SAMLogs makes n logs of entity numbered from first, with dates spread so that files interleave;
// every third shares its date with the previous one, so ties are broken by id.
func SAMLogs(entity domain.ID, first, n int) []domain.SAMActionLog {
	out := make([]domain.SAMActionLog, n)
	for i := range out {
		k := first + i
		out[i] = domain.SAMActionLog{ID: SAMID(k), EntityID: entity, Action: "update_mid",
			ActionDate: SAMT0().Add(time.Duration(k-k%3) * time.Minute), SamID: int64(k)}
	}
	return out
}

// IDsInListOrder gives the logs' ids in the contract's order: actionDate descending, then id
// descending.
func IDsInListOrder(ls []domain.SAMActionLog) []domain.ID {
	s := slices.Clone(ls)
	slices.SortFunc(s, func(a, b domain.SAMActionLog) int {
		if c := b.ActionDate.Compare(a.ActionDate); c != 0 {
			return c
		}
		return strings.Compare(string(b.ID), string(a.ID))
	})
	ids := make([]domain.ID, len(s))
	for i := range s {
		ids[i] = s[i].ID
	}
	return ids
}

// WalkSAMPages reads every page of an entity's logs as staff see them, until an empty one, and
// returns the ids in page order with the last total.
func WalkSAMPages(t testing.TB, st *store.Store, entity domain.ID, size int64) ([]domain.ID, int64) {
	t.Helper()
	var ids []domain.ID
	var total int64
	for page := int64(1); ; page++ {
		got, tot, _, err := st.ListVisibleSAMActionLogs(context.Background(), domain.Scope{}, entity, page, size)
		if err != nil {
			t.Fatal(err)
		}
		total = tot
		if len(got) == 0 {
			return ids, total
		}
		for _, l := range got {
			ids = append(ids, l.ID)
		}
	}
}

// CheckSAMLogs checks the entity's buckets against its logs (bulkload.Bulk.CheckSAMBuckets), then
// every page of two sizes against want, and returns the buckets' sizes.
func CheckSAMLogs(t testing.TB, st *store.Store, entity domain.ID, want []domain.SAMActionLog) []int64 {
	t.Helper()
	var buckets []int64
	err := st.Load(context.Background(), func(b *bulkload.Bulk) (err error) {
		buckets, err = b.CheckSAMBuckets(entity)
		return err
	})
	if err != nil {
		t.Fatalf("buckets: %v", err)
	}
	for _, size := range []int64{7, 500} {
		got, total := WalkSAMPages(t, st, entity, size)
		if total != int64(len(want)) || !slices.Equal(got, IDsInListOrder(want)) {
			t.Fatalf("pages of %d: %d logs, total %d of %d, order right: %v", size, len(got), total, len(want), slices.Equal(got, IDsInListOrder(want)))
		}
	}
	return buckets
}

// ScrambledSAMLogs makes n logs of entity, ids from first, with dates in a scrambled order (a few
// shared, so that ties are broken by id).
func ScrambledSAMLogs(entity domain.ID, first, n int) []domain.SAMActionLog {
	out := SAMLogs(entity, first, n)
	for i := range out {
		out[i].ActionDate = SAMT0().Add(time.Duration((i*7919)%n/2) * time.Second)
	}
	return out
}
