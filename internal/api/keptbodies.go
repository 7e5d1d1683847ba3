package api

import (
	"slices"
	"sync"

	"backoffice/internal/domain"
)

// keptBodies keeps the encoded answers of recent reads. An answer is a pure function of what the
// store returned for it, so a kept answer is written again only when what the store has just
// returned for this request equals, to the field, what it was encoded from: nothing is served
// that encoding it now would not produce, and freshness stays the store's (the value compared is
// the one read for this request). Encoding is a large part of serving a read
// (docs/performance.md); comparing the values costs far less.
type keptBodies[K comparable, V any] struct {
	same   func(a, b V) bool // equal to the field, as the answer writes them
	answer func(V) any       // what encodeJSON is given
	mu     sync.Mutex
	kept   map[K]keptBody[V]
}

type keptBody[V any] struct {
	value V
	body  []byte
}

// maxKeptBodies bounds what each keeps: when full, one answer, any, makes room for the next, so
// a caller sweeping many leads or pages leaves the other callers' answers kept.
const maxKeptBodies = 1024

func newKeptBodies[K comparable, V any](same func(a, b V) bool, answer func(V) any) *keptBodies[K, V] {
	return &keptBodies[K, V]{same: same, answer: answer, kept: make(map[K]keptBody[V])}
}

// body is the answer for v, read under key: the kept one when it was encoded from an equal value,
// otherwise encoded now and kept. v must be the caller's own (the store hands out copies), as it
// is kept with the answer.
func (b *keptBodies[K, V]) body(key K, v V) ([]byte, error) {
	b.mu.Lock()
	k, ok := b.kept[key]
	b.mu.Unlock()
	if ok && b.same(k.value, v) {
		return k.body, nil
	}
	body, err := encodeJSON(b.answer(v))
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	if len(b.kept) >= maxKeptBodies {
		// Whichever a range meets first: the runtime starts each range at a random place, so each
		// answer is as likely as any other to go.
		for k := range b.kept {
			delete(b.kept, k)
			break
		}
	}
	b.kept[key] = keptBody[V]{value: v, body: body}
	b.mu.Unlock()
	return body, nil
}

// samPage is what a SAM log page's answer is made of.
type samPage struct {
	meta Meta
	logs []domain.SAMActionLog
}

// samPageKey names a page: which entity's, and where in its list.
type samPageKey struct {
	entity     domain.ID
	page, size int64
}

func newSAMPageBodies() *keptBodies[samPageKey, samPage] {
	return newKeptBodies[samPageKey](sameSAMPage, func(p samPage) any {
		return List[samLogJSON]{Meta: p.meta, Data: samLogsJSON(p.logs)}
	})
}

// sameSAMPage: time.Time's == also compares the location, which the encoding writes as an offset;
// nil logs are written as null, empty ones as [].
func sameSAMPage(a, b samPage) bool {
	return a.meta == b.meta && (a.logs == nil) == (b.logs == nil) && slices.Equal(a.logs, b.logs)
}

// newAcceptanceBodies keeps service acceptances' answers by lead. Visibility is the store's: a
// lead the caller may not see never reaches the encoding.
func newAcceptanceBodies() *keptBodies[domain.ID, domain.ServiceAcceptance] {
	return newKeptBodies[domain.ID](sameAcceptance, func(sa domain.ServiceAcceptance) any { return sa })
}

// sameAcceptance compares what the answer writes: the values pointed to, and nil plans (null)
// against empty ones ([]). A field added to ServiceAcceptance must be added here
// (TestSameAcceptanceComparesEveryField).
func sameAcceptance(a, b domain.ServiceAcceptance) bool {
	return samePtr(a.MidID, b.MidID) && a.Configured == b.Configured &&
		(a.CardPlans == nil) == (b.CardPlans == nil) && slices.Equal(a.CardPlans, b.CardPlans) &&
		samePtr(a.EBTFcsNumber, b.EBTFcsNumber) && samePtr(a.AmexProgram, b.AmexProgram) &&
		samePtr(a.AmexEsaNumber, b.AmexEsaNumber) && samePtr(a.EBTBenefitMode, b.EBTBenefitMode)
}

func samePtr[T comparable](a, b *T) bool { return a == b || a != nil && b != nil && *a == *b }
