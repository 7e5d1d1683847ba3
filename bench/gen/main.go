// Command gen writes a large, valid dataset file for the load benchmark (bench/load.sh): by
// default 1,000,000 SAM action logs on one lead, 10,000 leads each with a principal and an SSN,
// and 1,000 line items, plus the partner, user, API key and session to call the service with. It
// writes JSON by hand, in one pass, so that making the file is never what a benchmark waits for.
//
//	go run ./bench/gen -out bench.json -targets targets.env -principals principals.txt
//
// The targets file holds shell assignments of the ids the benchmark requests; the principals file
// every principal, one "LEAD PRINCIPAL" line each, for the decrypts spread over all of them
// (bench/many.lua).
package main

import (
	"bufio"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"time"
)

func main() {
	out := flag.String("out", "bench-dataset.json", "dataset file to write")
	targets := flag.String("targets", "", "file to write the benchmark's ids to, as shell assignments")
	samLogs := flag.Int("sam-logs", 1_000_000, "SAM action logs on the one busy lead")
	leads := flag.Int("leads", 10_000, "leads, each with one principal that has an SSN")
	lineItems := flag.Int("line-items", 1_000, "line items, ten per deployment order")
	seed := flag.Uint64("seed", 1, "random seed (the same seed writes the same file)")
	principals := flag.String("principals", "", "file to write every principal to, one \"LEAD PRINCIPAL\" line each")
	flag.Parse()
	if *leads < 2 || *samLogs < 0 || *lineItems < 0 {
		fmt.Fprintln(os.Stderr, "gen: need at least 2 leads and no negative counts")
		os.Exit(2)
	}
	f, err := os.Create(*out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
	g := &gen{w: bufio.NewWriterSize(f, 1<<20), rnd: rand.New(rand.NewPCG(*seed, 0x5eed))}
	t := g.dataset(*samLogs, *leads, *lineItems)
	if err := g.w.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
	if err := f.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
	if *targets != "" {
		env := fmt.Sprintf("BENCH_API_KEY=%s\nBENCH_SESSION=%s\nBENCH_USER=%s\nBENCH_SAM_ENTITY=%s\nBENCH_LEAD=%s\nBENCH_PRINCIPAL=%s\nBENCH_SAM_LOGS=%d\nBENCH_RECORDS=%d\n",
			apiKey, sessionToken, fixed(kUser, 1), t.samEntity, t.lead, t.principal, *samLogs, g.records)
		if err := os.WriteFile(*targets, []byte(env), 0o600); err != nil {
			fmt.Fprintln(os.Stderr, "gen:", err)
			os.Exit(1)
		}
	}
	if *principals != "" {
		if err := os.WriteFile(*principals, principalLines(*leads), 0o600); err != nil {
			fmt.Fprintln(os.Stderr, "gen:", err)
			os.Exit(1)
		}
	}
}

// principalLines lists the dataset's principals, each beside its lead.
func principalLines(leads int) []byte {
	var b []byte
	for i := range leads {
		lead, principal := principalOf(i)
		b = fmt.Appendf(b, "%s %s\n", lead, principal)
	}
	return b
}

// principalOf is the i-th lead's one principal, with the lead.
func principalOf(i int) (lead, principal string) { return fixed(kLead, i), fixed(kPrincipal, i) }

// apiKey and sessionToken are the benchmark's credentials, of a staff user with every permission
// (who is also the sub of bench/idp's access token). Strong, as import requires of every key (a
// readable name before 32 random bytes); public, so never for production.
const (
	apiKey       = "bench-staff-key-IsikRNRm1ojd_zrU65aM1603YyZmUA1K9PvaYsbrgVg"
	sessionToken = "bench-staff-session-vokYcKfsGiuOpy2EDyAKTrfn-TA6uuUDGjKrczjujj0"
)

type gen struct {
	w       *bufio.Writer
	rnd     *rand.Rand
	buf     []byte
	records int
}

type targets struct{ samEntity, lead, principal string }

// fixed ids: readable, valid version-4 uuids, kind k and number n.
func fixed(k, n int) string { return fmt.Sprintf("%08x-0000-4000-8000-%012x", k, n) }

const (
	kPartner = iota + 1
	kUser
	kKey
	kPlan
	kLead
	kPrincipal
	kMerchant
	kModel
	kOrder
	kLineItem
	kSession
)

// random appends a random version-4 uuid: SAM log ids arrive in no particular order.
func (g *gen) random(b []byte) []byte {
	const hex = "0123456789abcdef"
	hi, lo := g.rnd.Uint64(), g.rnd.Uint64()
	hi = hi&^0xf000 | 0x4000     // version 4
	lo = lo&^(0xc<<60) | 0x8<<60 // variant 10
	var raw [16]byte
	for i := range 8 {
		raw[i] = byte(hi >> (56 - 8*i))
		raw[8+i] = byte(lo >> (56 - 8*i))
	}
	for i, c := range raw {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			b = append(b, '-')
		}
		b = append(b, hex[c>>4], hex[c&0xf])
	}
	return b
}

func (g *gen) raw(s string) { g.w.WriteString(s) }

// section writes `"key":[` then n records from rec, separated by commas.
func (g *gen) section(key string, first bool, n int, rec func(b []byte, i int) []byte) {
	if !first {
		g.raw(",\n")
	}
	g.raw(`"` + key + `":[`)
	for i := range n {
		b := g.buf[:0]
		if i > 0 {
			b = append(b, ",\n"...)
		}
		b = rec(b, i)
		g.w.Write(b)
		g.buf = b
	}
	g.raw("]")
	g.records += n
}

func (g *gen) dataset(samLogs, leads, lineItems int) targets {
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	stamp := now.Format(time.RFC3339)
	partner, user := fixed(kPartner, 1), fixed(kUser, 1)
	plans := []string{fixed(kPlan, 1), fixed(kPlan, 2), fixed(kPlan, 3), fixed(kPlan, 4)}
	g.raw("{\n")
	g.section("partners", true, 1, func(b []byte, _ int) []byte {
		return fmt.Appendf(b, `{"id":%q,"name":"Bench Partner"}`, partner)
	})
	g.section("users", false, 1, func(b []byte, _ int) []byte {
		return fmt.Appendf(b, `{"id":%q,"partnerId":null,"email":"bench@example.com","permissions":["*"]}`, user)
	})
	g.section("apiKeys", false, 1, func(b []byte, _ int) []byte {
		return fmt.Appendf(b, `{"id":%q,"userId":%q,"key":%q,"expiresAt":null}`, fixed(kKey, 1), user, apiKey)
	})
	g.section("sessions", false, 1, func(b []byte, _ int) []byte {
		return fmt.Appendf(b, `{"id":%q,"userId":%q,"token":%q,"expiresAt":"2099-01-01T00:00:00Z"}`, fixed(kSession, 1), user, sessionToken)
	})
	names := []string{"Visa", "Mastercard", "Discover", "American Express"}
	g.section("cardPlans", false, len(plans), func(b []byte, i int) []byte {
		return fmt.Appendf(b, `{"id":%q,"code":"plan%d","displayName":%q,"sortOrder":%d}`, plans[i], i+1, names[i], i+1)
	})
	g.section("leads", false, leads, func(b []byte, i int) []byte {
		b = fmt.Appendf(b, `{"id":%q,"partnerId":%q,"businessName":"Bench Business %d","midId":null,"serviceAcceptance":`, fixed(kLead, i), partner, i)
		if i%2 == 0 {
			return append(b, "null}"...)
		}
		return fmt.Appendf(b, `{"configured":true,"selectedCardPlanIds":[%q,%q,%q],"ebtFcsNumber":"1234567","amexProgram":"opt_blue","amexEsaNumber":null,"ebtBenefitMode":"both"}}`,
			plans[0], plans[1], plans[3])
	})
	g.section("principals", false, leads, func(b []byte, i int) []byte {
		lead, principal := principalOf(i)
		return fmt.Appendf(b, `{"id":%q,"leadId":%q,"firstName":"Pat","lastName":"Bench%d","ssn":"%03d-%02d-%04d"}`,
			principal, lead, i, 100+i%800, 10+i%89, i%10000)
	})
	orders := (lineItems + 9) / 10
	g.section("merchants", false, orders, func(b []byte, i int) []byte {
		return fmt.Appendf(b, `{"id":%q,"partnerId":%q,"leadId":null,"name":"Bench Merchant %d"}`, fixed(kMerchant, i), partner, i)
	})
	g.section("deploymentModels", false, 1, func(b []byte, _ int) []byte {
		return fmt.Appendf(b, `{"id":%q,"name":"Bench Terminal","equipmentType":"terminal","workflow":"gateway"}`, fixed(kModel, 1))
	})
	g.section("deploymentOrders", false, orders, func(b []byte, i int) []byte {
		return fmt.Appendf(b, `{"id":%q,"merchantId":%q}`, fixed(kOrder, i), fixed(kMerchant, i))
	})
	g.section("lineItems", false, lineItems, func(b []byte, i int) []byte {
		return fmt.Appendf(b, `{"id":%q,"orderId":%q,"orderType":"gateway","deploymentModelId":%q,"connectionType":["ip"],"status":"deployed","inventoryUnitId":null,"equipmentId":null,"varsheetId":null,"createdAt":%q,"createdBy":%q,"updatedAt":%q,"updatedBy":%q}`,
			fixed(kLineItem, i), fixed(kOrder, i/10), fixed(kModel, 1), stamp, user, stamp, user)
	})
	// The busy lead's logs, oldest first (as an append-only log exports them), a second apart.
	entity := fixed(kLead, 0)
	actions := []string{"add_equipment_purchase", "add_equipment_purchase_fail", "update_mid", "board_merchant"}
	start := now.Add(-time.Duration(samLogs) * time.Second)
	g.section("samActionLogs", false, samLogs, func(b []byte, i int) []byte {
		b = append(b, `{"id":"`...)
		b = g.random(b)
		b = append(b, `","entityId":"`...)
		b = append(b, entity...)
		b = append(b, `","action":"`...)
		b = append(b, actions[i%len(actions)]...)
		b = append(b, `","actionDate":"`...)
		b = start.Add(time.Duration(i)*time.Second).AppendFormat(b, time.RFC3339)
		b = append(b, `","samId":`...)
		b = strconv.AppendInt(b, int64(100000+i), 10)
		return append(b, '}')
	})
	g.raw("\n}\n")
	return targets{samEntity: entity, lead: fixed(kLead, 1), principal: fixed(kPrincipal, 1)}
}
