package api

import (
	"bytes"
	"encoding/json"
	"slices"
	"sync"

	"backoffice/internal/domain"
)

// samPageBodies keeps the encoded answers of recent SAM log pages. A page's answer is a pure
// function of its logs and its meta, so a kept answer is written again only when both equal, to
// the field, what the store has just returned for this request: nothing is served that encoding
// it now would not produce, and freshness stays the store's (the logs compared are the ones read
// for this request). Encoding was a third of a served page (docs/performance.md); comparing twenty
// logs costs a fraction of a microsecond.
type samPageBodies struct {
	mu   sync.Mutex
	kept map[samPageKey]samPageBody
}

// samPageKey names a page: which entity's, and where in its list.
type samPageKey struct {
	entity     domain.ID
	page, size int64
}

type samPageBody struct {
	meta Meta
	logs []domain.SAMActionLog
	body []byte
}

// maxSAMPageBodies bounds what is kept: when full it is emptied and fills again.
const maxSAMPageBodies = 1024

func newSAMPageBodies() *samPageBodies {
	return &samPageBodies{kept: make(map[samPageKey]samPageBody)}
}

// body is the answer for the page of meta and logs: the kept one when it was encoded from equal
// logs and meta, otherwise encoded now and kept. logs must be the caller's own (the store hands
// out copies), as they are kept with the answer.
func (b *samPageBodies) body(entity domain.ID, meta Meta, logs []domain.SAMActionLog) ([]byte, error) {
	key := samPageKey{entity: entity, page: meta.Page, size: meta.PerPage}
	b.mu.Lock()
	k, ok := b.kept[key]
	b.mu.Unlock()
	// time.Time's == also compares the location, which the encoding writes as an offset.
	if ok && k.meta == meta && (k.logs == nil) == (logs == nil) && slices.Equal(k.logs, logs) {
		return k.body, nil
	}
	body, err := encodeJSON(List[samLogJSON]{Meta: meta, Data: samLogsJSON(logs)})
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	if len(b.kept) >= maxSAMPageBodies {
		clear(b.kept)
	}
	b.kept[key] = samPageBody{meta: meta, logs: logs, body: body}
	b.mu.Unlock()
	return body, nil
}

// encodeJSON is v as writeJSON writes it, in bytes of its own.
func encodeJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
