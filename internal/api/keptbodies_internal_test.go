package api

import (
	"bytes"
	"reflect"
	"slices"
	"testing"
	"time"

	"backoffice/internal/domain"
)

// A kept answer is written again only for logs and meta equal to the field to those it was encoded
// from; any difference (a log's action, its date or the date's zone, the total, nil against
// empty) is encoded anew, and every answer is the bytes encoding would give now.
func TestSAMPageBodiesAreNeverAnswersOfOtherLogs(t *testing.T) {
	b := newSAMPageBodies()
	entity := domain.ID("00000005-0000-4000-8000-000000000000")
	at := time.Date(2026, 11, 25, 10, 0, 0, 123, time.UTC)
	logs := func() []domain.SAMActionLog {
		return []domain.SAMActionLog{
			{ID: "00000001-0000-4000-8000-000000000001", EntityID: entity, Action: "activate", ActionDate: at, SamID: 1},
			{ID: "00000001-0000-4000-8000-000000000002", EntityID: entity, Action: "deactivate", ActionDate: at.Add(-time.Hour), SamID: 2},
		}
	}
	meta := Meta{Page: 1, PerPage: 20, TotalCount: 2, TotalPages: 1}
	check := func(what string, meta Meta, logs []domain.SAMActionLog) []byte {
		t.Helper()
		got, err := b.body(samPageKey{entity: entity, page: meta.Page, size: meta.PerPage}, samPage{meta: meta, logs: logs})
		if err != nil {
			t.Fatal(err)
		}
		want, err := encodeJSON(List[samLogJSON]{Meta: meta, Data: samLogsJSON(logs)})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: answered %s, want %s", what, got, want)
		}
		return got
	}
	first := check("first", meta, logs())
	if again := check("the same page again", meta, logs()); &again[0] != &first[0] {
		t.Error("the same logs and meta were encoded again; want the kept answer")
	}
	changed := logs()
	changed[1].Action = "changed"
	check("a log's action changed", meta, changed)
	moved := logs()
	moved[0].ActionDate = at.Add(time.Nanosecond)
	check("a log's date moved", meta, moved)
	zoned := logs()
	zoned[0].ActionDate = at.In(time.FixedZone("x", 3600)) // the same instant, written with +01:00
	check("a log's date in another zone", meta, zoned)
	more := meta
	more.TotalCount, more.TotalPages = 21, 2
	check("the total changed", more, logs())
	empty := Meta{Page: 1, PerPage: 20, TotalCount: 0, TotalPages: 1}
	check("no logs", empty, []domain.SAMActionLog{})
	check("nil logs", empty, nil)
}

func fullAcceptance() domain.ServiceAcceptance {
	mid, ebt, program, esa, mode := domain.ID("00000002-0000-4000-8000-000000000001"), "1234567", "opt_blue", "ESA-1", "both"
	return domain.ServiceAcceptance{MidID: &mid, Configured: true, EBTFcsNumber: &ebt, AmexProgram: &program,
		AmexEsaNumber: &esa, EBTBenefitMode: &mode, CardPlans: []domain.CardPlanSelection{
			{CardPlan: domain.CardPlan{ID: "00000004-0000-4000-8000-000000000001", Code: "visa", DisplayName: "Visa", SortOrder: 1}, Selected: true},
			{CardPlan: domain.CardPlan{ID: "00000004-0000-4000-8000-000000000002", Code: "mc", DisplayName: "Mastercard", SortOrder: 2}},
		}}
}

// Every field of a service acceptance takes part in the comparison: each changed alone (a value
// pointed to, a pointer made nil, a flag, a plan's field, one plan fewer, nil plans against
// empty ones) makes it another answer. A field this test cannot change fails it, until both the
// test and sameAcceptance know it.
func TestSameAcceptanceComparesEveryField(t *testing.T) {
	base := fullAcceptance()
	if !sameAcceptance(base, fullAcceptance()) {
		t.Fatal("two equal acceptances compare unequal")
	}
	typ := reflect.TypeFor[domain.ServiceAcceptance]()
	for i := range typ.NumField() {
		name := typ.Field(i).Name
		var changes []domain.ServiceAcceptance
		change := func(edit func(f reflect.Value)) {
			c := fullAcceptance()
			edit(reflect.ValueOf(&c).Elem().Field(i))
			changes = append(changes, c)
		}
		switch typ.Field(i).Type.Kind() {
		case reflect.Pointer:
			change(func(f reflect.Value) {
				other := reflect.New(f.Type().Elem())
				other.Elem().SetString(f.Elem().String() + "x")
				f.Set(other)
			})
			change(func(f reflect.Value) { f.SetZero() })
		case reflect.Bool:
			change(func(f reflect.Value) { f.SetBool(!f.Bool()) })
		case reflect.Slice:
			change(func(f reflect.Value) { f.Set(f.Slice(0, f.Len()-1)) })
			change(func(f reflect.Value) { f.SetZero() })
			for _, edit := range []func(*domain.CardPlanSelection){
				func(p *domain.CardPlanSelection) { p.ID = "00000004-0000-4000-8000-000000000009" },
				func(p *domain.CardPlanSelection) { p.Code += "x" },
				func(p *domain.CardPlanSelection) { p.DisplayName += "x" },
				func(p *domain.CardPlanSelection) { p.SortOrder++ },
				func(p *domain.CardPlanSelection) { p.Selected = !p.Selected },
			} {
				c := fullAcceptance()
				c.CardPlans = slices.Clone(c.CardPlans)
				edit(&c.CardPlans[1])
				changes = append(changes, c)
			}
		default:
			t.Fatalf("field %s: this test cannot change a %s; teach it, and sameAcceptance", name, typ.Field(i).Type)
		}
		for k, c := range changes {
			if sameAcceptance(base, c) || sameAcceptance(c, base) {
				t.Errorf("field %s, change %d: compares equal to the acceptance it differs from", name, k)
			}
		}
	}
	empty, none := fullAcceptance(), fullAcceptance()
	empty.CardPlans, none.CardPlans = []domain.CardPlanSelection{}, nil
	if sameAcceptance(empty, none) {
		t.Error("no plans ([]) and nil plans (null) compare equal")
	}
}

// A kept acceptance answer is the bytes encoding the acceptance read now gives, whatever changed.
func TestAcceptanceBodiesAreNeverAnswersOfOtherAcceptances(t *testing.T) {
	b := newAcceptanceBodies()
	lead := domain.ID("00000003-0000-4000-8000-000000000001")
	check := func(what string, sa domain.ServiceAcceptance) []byte {
		t.Helper()
		got, err := b.body(lead, sa)
		if err != nil {
			t.Fatal(err)
		}
		want, err := encodeJSON(sa)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: answered %s, want %s", what, got, want)
		}
		return got
	}
	first := check("first", fullAcceptance())
	if again := check("the same again", fullAcceptance()); &again[0] != &first[0] {
		t.Error("an equal acceptance was encoded again; want the kept answer")
	}
	changed := fullAcceptance()
	*changed.AmexProgram = "retail"
	check("its program changed", changed)
	unset := fullAcceptance()
	unset.MidID = nil
	check("its MID unset", unset)
	noPlans := fullAcceptance()
	noPlans.CardPlans = []domain.CardPlanSelection{}
	check("no plans", noPlans)
	noPlans.CardPlans = nil
	check("nil plans", noPlans)
}

// A full keptBodies makes room for the next answer by dropping one kept answer, not all: a caller
// sweeping many leads or pages keeps the other callers' answers kept. Which one goes is left to
// chance, so that no answer is always the one.
func TestFullKeptBodiesDropOneAnswer(t *testing.T) {
	dropped := map[int]bool{}
	for range 20 {
		b := newKeptBodies[int](func(a, b int) bool { return a == b }, func(v int) any { return v })
		for i := range maxKeptBodies + 1 {
			if _, err := b.body(i, i); err != nil {
				t.Fatal(err)
			}
		}
		if len(b.kept) != maxKeptBodies {
			t.Fatalf("%d answers kept after %d; one should have made room, leaving %d", len(b.kept), maxKeptBodies+1, maxKeptBodies)
		}
		if _, ok := b.kept[maxKeptBodies]; !ok {
			t.Fatal("the answer that found keptBodies full was not kept")
		}
		for i := range maxKeptBodies {
			if _, ok := b.kept[i]; !ok {
				dropped[i] = true
			}
		}
	}
	if len(dropped) < 2 {
		t.Errorf("twenty full keptBodies all dropped the same answer (%v): one answer is always the one to go", dropped)
	}
}
