package api

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"backoffice/internal/domain"
)

// pathID parses a uuid path parameter (domain.ParseID).
func pathID(r *http.Request, name string) (domain.ID, error) {
	id, err := domain.ParseID(r.PathValue(name))
	if err != nil {
		return "", domain.InvalidParameter(name, "must be a uuid")
	}
	return id, nil
}

// Page is a validated page request: 1 <= page <= MaxPage, 1 <= size <= MaxPageSize.
type Page struct {
	Number int64
	Size   int64
}

const (
	DefaultPageSize = 20
	MaxPageSize     = 100
	// MaxPage is 2^53-1, the largest integer a JavaScript number (an IEEE double) holds exactly:
	// meta.page, which repeats the page asked for, must read back as what was asked. It also keeps
	// the offset, (page-1)*size, far inside an int64.
	MaxPage = 1<<53 - 1
)

// ParsePage reads page and size from the query. Only plain ASCII digits are accepted: signs,
// spaces, decimals and exponents are all refused, so a value means one thing.
func ParsePage(page, size string, pagePresent, sizePresent bool) (Page, error) {
	p := Page{Number: 1, Size: DefaultPageSize}
	var err error
	if pagePresent {
		if p.Number, err = parseCount(page); err != nil || p.Number < 1 || p.Number > MaxPage {
			return p, domain.InvalidParameter("page", "must be a whole number from 1 to 9007199254740991")
		}
	}
	if sizePresent {
		if p.Size, err = parseCount(size); err != nil || p.Size < 1 || p.Size > MaxPageSize {
			return p, domain.InvalidParameter("size", "must be a whole number from 1 to 100")
		}
	}
	return p, nil
}

func parseCount(s string) (int64, error) {
	if s == "" {
		return 0, strconv.ErrSyntax
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, strconv.ErrSyntax
		}
	}
	return strconv.ParseInt(s, 10, 64)
}

func pageFromQuery(r *http.Request) (Page, error) {
	q, err := queryOf(r)
	if err != nil {
		return Page{}, err
	}
	return pageOf(q)
}

func pageOf(q url.Values) (Page, error) {
	return ParsePage(q.Get("page"), q.Get("size"), q.Has("page"), q.Has("size"))
}

// queryOf is r's query, every pair of it: a pair that does not decode (a bad %-escape, a
// semicolon) is refused, naming its parameter where its name decodes, where r.URL.Query() would
// drop it without a word (and with it a filter of the audit list).
func queryOf(r *http.Request) (url.Values, error) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err == nil {
		return q, nil
	}
	name := "query"
	for pair := range strings.SplitSeq(r.URL.RawQuery, "&") {
		if _, err := url.ParseQuery(pair); err != nil {
			k, _, _ := strings.Cut(pair, "=")
			if n, err := url.QueryUnescape(k); err == nil && n != "" && !strings.Contains(n, ";") {
				name = n
			}
			break
		}
	}
	return nil, domain.InvalidParameter(name, "does not decode as a query parameter (a bad %-escape, or a semicolon)")
}

// Meta is the list envelope's meta. TotalPages is at least 1, so that a client's walk (request
// pages until page equals totalPages, docs/api.md) also ends on an empty list.
type Meta struct {
	Page       int64 `json:"page"`
	PerPage    int64 `json:"perPage"`
	TotalCount int64 `json:"totalCount"`
	TotalPages int64 `json:"totalPages"`
}

func newMeta(p Page, total int64) Meta {
	pages := (total + p.Size - 1) / p.Size
	return Meta{Page: p.Number, PerPage: p.Size, TotalCount: total, TotalPages: max(1, pages)}
}

// List is the list envelope.
type List[T any] struct {
	Meta Meta `json:"meta"`
	Data []T  `json:"data"`
}
