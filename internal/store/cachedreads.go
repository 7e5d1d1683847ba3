package store

import (
	"math"

	"backoffice/internal/column"
	"backoffice/internal/domain"
)

// cachedRead is one of the reads the read cache keeps. Each lists the statements it runs, and
// its load can run no other (cachedReader): TestTriggersCoverWhatCachedReadsRead has the engine
// say which columns those read, and fails unless the generation's triggers move on every change
// to them. So the statements are here, with their arguments, below the cache that checks them
// and below the store's methods that run them and scan their rows: whoever changes one sees that
// a trigger must watch what it reads.
type cachedRead uint8

const (
	credentialRead cachedRead = iota // Credential
	acceptanceRead                   // ServiceAcceptance
	ssnRead                          // PrincipalSSN
	samPageRead                      // ListVisibleSAMActionLogs
	accountRead                      // Account
	cachedReads                      // how many there are
)

// queries are the statements the read runs.
func (r cachedRead) queries() []string {
	switch r {
	case credentialRead:
		return []string{apiKeyLookup, sessionLookup}
	case acceptanceRead:
		return []string{acceptanceQuery}
	case ssnRead:
		return []string{principalSSNQuery}
	case samPageRead:
		return []string{samVisiblePageQuery, samTotalVisibleQuery}
	case accountRead:
		return []string{accountByID, accountByExternalID}
	}
	return nil
}

// Each kind's lookup, in plain sight. Sessions record no last use; CAST keeps the column list
// the same shape for both engines.
const (
	apiKeyLookup = `SELECT c.id, u.id, u.partner_id, u.permissions, u.disabled, c.key_hash, c.expires_at, c.revoked_at, c.last_used_at
FROM api_keys c JOIN users u ON u.id = c.user_id WHERE c.key_hash = ?`
	sessionLookup = `SELECT c.id, u.id, u.partner_id, u.permissions, u.disabled, c.token_hash, c.expires_at, c.revoked_at, CAST(NULL AS BIGINT)
FROM sessions c JOIN users u ON u.id = c.user_id WHERE c.token_hash = ?`
)

// The user an access token names, by either of the user's identifiers.
const (
	accountByID         = `SELECT id, partner_id, permissions, disabled FROM users WHERE id = ?`
	accountByExternalID = `SELECT id, partner_id, permissions, disabled FROM users WHERE external_id = ?`
)

// acceptanceQuery reads a lead's service acceptance: the lead's columns repeat on each catalogue
// row (on one row with no plan columns when the catalogue is empty); no row at all means no such
// lead.
const acceptanceQuery = `
SELECT l.partner_id, l.mid_id, l.sa_configured, l.sa_ebt_fcs_number, l.sa_amex_program, l.sa_amex_esa_number, l.sa_ebt_benefit_mode,
       c.id, c.code, c.display_name, c.sort_order, lc.lead_id IS NOT NULL
FROM leads l
LEFT JOIN card_plans c ON TRUE
LEFT JOIN lead_card_plans lc ON lc.card_plan_id = c.id AND lc.lead_id = l.id
WHERE l.id = ?
ORDER BY c.sort_order, c.id`

// principalSSNQuery reads a principal's sealed SSN with the partner of its lead.
const principalSSNQuery = `SELECT l.partner_id, p.ssn_key_id, p.ssn_sealed FROM principals p JOIN leads l ON l.id = p.lead_id WHERE p.id = ? AND p.lead_id = ?`

// samPageQuery selects the entity's total and the logs of a page, newest first; the caller adds
// any condition, the order (samPageOrder) and the limit. Its arguments are samPageArgs.
//
// The logs are keyed by their list order, (entity_id, action_date, id), and counted in buckets of
// consecutive logs (sam_log_buckets, see migration 0006). The page's newest log is the one with
// total - 1 - offset logs older than it. The bucket after the one holding it (nb) is the first
// whose below is past that rank: one probe of the buckets' (entity_id, below) index. The page is
// then read backwards from nb's start, skipping the logs between nb's start and the page's
// newest log: fewer than a bucket holds, whatever the page's depth. Without such a bucket the
// page is in the newest one and is read from the entity's newest log. The total is the newest
// bucket's below + n, one probe too. All of it is one statement, so that the total and the page
// agree even while an import lands; only a page past the end asks for the total on its own.
const samPageQuery = `
WITH t AS (` + samTotalQuery + `),
nb AS (SELECT start_date, start_id, below FROM sam_log_buckets
  WHERE entity_id = ? AND below >= (SELECT total FROM t) - ?
  ORDER BY below, start_date, start_id LIMIT 1)
SELECT (SELECT total FROM t), id, action, action_date, sam_id
FROM sam_action_logs
WHERE entity_id = ? AND (action_date, id) < (COALESCE((SELECT start_date FROM nb), ?), COALESCE((SELECT start_id FROM nb), ?))`

// samPageOrder orders and limits a page: newest first, skipping the logs newer than the page
// inside its stretch (the arguments of samPageLimitArgs).
const samPageOrder = `
ORDER BY action_date DESC, id DESC
LIMIT ? OFFSET COALESCE(? - (SELECT total FROM t) + COALESCE((SELECT below FROM nb), (SELECT total FROM t)), 0)`

// samTotalQuery is an entity's count of logs as one probe: its newest bucket's below + n. An
// emptied first bucket may share its below with the next one; the start breaks the tie.
const samTotalQuery = `SELECT below + n AS total FROM sam_log_buckets WHERE entity_id = ?
  ORDER BY below DESC, start_date DESC, start_id DESC LIMIT 1`

// samAfterAll is past the key of every log, (action_date, id): an id of 17 bytes sorts after
// every id of 16 at the largest date.
var samAfterAll = struct {
	date int64
	id   []byte
}{math.MaxInt64, column.AfterEveryUUID()}

// samPageArgs are samPageQuery's arguments.
func samPageArgs(key []byte, offset int64) []any {
	return []any{key, key, offset, key, samAfterAll.date, samAfterAll.id}
}

// samPageLimitArgs are samPageOrder's arguments.
func samPageLimitArgs(offset, size int64) []any { return []any{size, offset} }

// visibleEntity says, as one SQL condition, whether an id names a lead, merchant, deployment order,
// line item or equipment that the scope may see. Its parameters (visibleArgs) are, for each of the
// five kinds of entity, the id and twice the scope's partner ("" for staff). Equipment on no line
// item belongs to no partner: staff only.
const visibleEntity = `EXISTS (
SELECT 1 FROM leads WHERE id = ? AND (CAST(? AS TEXT) = '' OR partner_id = ?)
UNION ALL SELECT 1 FROM merchants WHERE id = ? AND (CAST(? AS TEXT) = '' OR partner_id = ?)
UNION ALL SELECT 1 FROM deployment_orders o JOIN merchants m ON m.id = o.merchant_id WHERE o.id = ? AND (CAST(? AS TEXT) = '' OR m.partner_id = ?)
UNION ALL SELECT 1 FROM line_items li JOIN deployment_orders o ON o.id = li.order_id JOIN merchants m ON m.id = o.merchant_id WHERE li.id = ? AND (CAST(? AS TEXT) = '' OR m.partner_id = ?)
UNION ALL SELECT 1 FROM equipment e
  LEFT JOIN line_items li ON li.equipment_id = e.id
  LEFT JOIN deployment_orders o ON o.id = li.order_id
  LEFT JOIN merchants m ON m.id = o.merchant_id
  WHERE e.id = ? AND (CAST(? AS TEXT) = '' OR m.partner_id = ?))`

// samVisiblePageQuery is a page of an entity's logs with their total, if the scope sees the
// entity: samPageArgs, visibleArgs, samPageLimitArgs.
const samVisiblePageQuery = samPageQuery + `
AND ` + visibleEntity + samPageOrder

// samTotalVisibleQuery is an entity's total, 0 without logs, and whether the scope sees it (1 or
// 0): the key, visibleArgs.
const samTotalVisibleQuery = `SELECT COALESCE((` + samTotalQuery + `), 0), CASE WHEN ` + visibleEntity + ` THEN 1 ELSE 0 END`

func visibleArgs(scope domain.Scope, id domain.ID) []any {
	p := string(scope.PartnerID)
	return []any{id, p, p, id, p, p, id, p, p, id, p, p, id, p, p}
}
