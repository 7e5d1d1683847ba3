package store_test

// Helpers for tests of SAM action logs: logs of a partner's leads and their pages.

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
)

func samID(n int) domain.ID { return domain.ID(fmt.Sprintf("00000000-0000-4000-9000-%012d", n)) }

// samBase is a partner with two leads to hang logs on.
func samBase() *dataset.Dataset {
	p := samID(900001)
	return &dataset.Dataset{
		Partners: []domain.Partner{{ID: p, Name: "P"}},
		Leads: []domain.Lead{
			{ID: samID(900002), PartnerID: p, BusinessName: "L1"},
			{ID: samID(900003), PartnerID: p, BusinessName: "L2"},
		},
	}
}

var samT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// logs makes n logs of entity numbered from first, with dates spread so that files interleave;
// every third shares its date with the previous one, so ties are broken by id.
func logs(entity domain.ID, first, n int) []domain.SAMActionLog {
	out := make([]domain.SAMActionLog, n)
	for i := range out {
		k := first + i
		out[i] = domain.SAMActionLog{ID: samID(k), EntityID: entity, Action: "update_mid",
			ActionDate: samT0.Add(time.Duration(k-k%3) * time.Minute), SamID: int64(k)}
	}
	return out
}

// listOrder is the contract's order: actionDate descending, then id descending.
func idsInListOrder(ls []domain.SAMActionLog) []domain.ID {
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

func walk(t *testing.T, st *store.Store, entity domain.ID, size int64) ([]domain.ID, int64) {
	t.Helper()
	var ids []domain.ID
	var total int64
	for page := int64(1); ; page++ {
		got, tot, err := store.ListSAMActionLogs(context.Background(), st, entity, page, size)
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

// Logs are imported in batches; positions are computed for a fresh entity and renumbered for an
