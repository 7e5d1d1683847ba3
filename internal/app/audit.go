package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"

	"backoffice/internal/api"
	"backoffice/internal/domain"
	"backoffice/internal/store"
)

func runAudit(ctx context.Context, env Env, cfg Config, args []string) error {
	return runGroup(ctx, env, cfg, "audit", args, map[string]runFunc{"list": runAuditList, "verify": runAuditVerify})
}

// auditFlags maps each flag of audit list to the HTTP list's query parameter, so that both read
// their filters through api.ParseAuditFilter and refuse the same values.
var auditFlags = []struct{ flag, param, usage string }{
	{"actor-user-id", "actorUserId", "only events of this user (uuid)"},
	{"target-id", "targetId", "only events about this object (uuid)"},
	{"action", "action", "only this action, exactly (principal.decrypt, merchant_document.delete, …)"},
	{"outcome", "outcome", "only this outcome: granted, denied, not_found or invalid"},
	{"from", "from", "only events at or after this RFC 3339 time"},
	{"to", "to", "only events before this RFC 3339 time"},
}

// runAuditList prints the events a filter matches, newest first. It reads the database directly,
// as an operator with shell access can, so it is not itself recorded (the HTTP list is).
func runAuditList(ctx context.Context, env Env, cfg Config, args []string) error {
	fs := newFlagSet("audit list")
	cfg.databaseFlags(fs)
	values := make([]*string, len(auditFlags))
	for i, f := range auditFlags {
		values[i] = fs.String(f.flag, "", f.usage)
	}
	format := fs.String("format", "table", "table, or json (one event per line)")
	limit := fs.Int64("limit", 100, "print at most this many events (0: all)")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	if *format != "table" && *format != "json" {
		return usagef("--format: want table or json")
	}
	if *limit < 0 {
		return usagef("--limit: want 0 or more")
	}
	q := url.Values{}
	for i, f := range auditFlags {
		if *values[i] != "" {
			q.Set(f.param, *values[i])
		}
	}
	filter, err := api.ParseAuditFilter(q)
	if err != nil {
		return auditFlagError(err)
	}
	st, err := openStore(ctx, cfg, nil)
	if err != nil {
		return err
	}
	defer st.Close()
	print := printAuditTable
	if *format == "json" {
		print = printAuditJSON
	}
	return listAudit(ctx, st, filter, *limit, func(events []domain.AuditEvent) error { return print(env.Stdout, events) })
}

// listAudit reads the matching events a page at a time, newest first, up to limit (0: all).
func listAudit(ctx context.Context, st *store.Store, f domain.AuditFilter, limit int64, emit func([]domain.AuditEvent) error) error {
	const size = api.MaxPageSize
	var seen int64
	for page := int64(1); ; page++ {
		events, total, err := st.ListAuditEvents(ctx, f, page, size)
		if err != nil {
			return err
		}
		if limit > 0 && seen+int64(len(events)) > limit {
			events = events[:limit-seen]
		}
		seen += int64(len(events))
		if page == 1 || len(events) > 0 {
			if err := emit(events); err != nil {
				return err
			}
		}
		if len(events) < size || seen >= total || (limit > 0 && seen >= limit) {
			return nil
		}
	}
}

// auditFlagError names the flag, not the query parameter, of a refused filter.
func auditFlagError(err error) error {
	msg := err.Error()
	if e, ok := domain.AsError(err); ok {
		msg = e.Detail
	}
	for _, f := range auditFlags {
		msg = strings.ReplaceAll(msg, f.param, "--"+f.flag)
	}
	return usagef("%s", msg)
}

func printAuditTable(w io.Writer, events []domain.AuditEvent) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tAT\tACTOR\tACTION\tTARGET\tOUTCOME\tDETAIL")
	for _, e := range events {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", e.Seq, e.At.UTC().Format("2006-01-02T15:04:05.000000Z07:00"), e.ActorUserID,
			e.Action, orDash(e.TargetID), e.Outcome, strconv.Quote(e.Detail))
	}
	return tw.Flush()
}

func printAuditJSON(w io.Writer, events []domain.AuditEvent) error {
	enc := json.NewEncoder(w)
	for _, e := range events {
		if err := enc.Encode(e); err != nil {
			return err
		}
	}
	return nil
}

// errAuditChainBroken marks a verify that found the chain broken (exit status 1, like any error).
var errAuditChainBroken = errors.New("audit chain broken")

// runAuditVerify walks the chain with the master key ring. Intact, it prints the newest event's
// link, which an operator records elsewhere and passes as --head next time, so that a tail cut
// off is caught too (the database alone cannot tell it from a shorter trail).
func runAuditVerify(ctx context.Context, env Env, cfg Config, args []string) error {
	fs := newFlagSet("audit verify")
	cfg.databaseFlags(fs)
	head := fs.String("head", "", "a link printed by an earlier verify: it must still be in the chain")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	ring, err := masterRing(cfg)
	if err != nil {
		return err
	}
	st, err := openStore(ctx, cfg, ring)
	if err != nil {
		return err
	}
	defer st.Close()
	rep, err := st.VerifyAuditChain(ctx, ring, strings.TrimSpace(*head))
	if err != nil {
		return err
	}
	if rep.Break != nil {
		fmt.Fprintf(env.Stdout, "BROKEN: %s\n", rep.Break.Error())
		return fmt.Errorf("%w: first bad event: seq %d %s", errAuditChainBroken, rep.Break.Seq, orDash(string(rep.Break.ID)))
	}
	fmt.Fprintf(env.Stdout, "intact: %d events", rep.Events)
	if rep.Legacy > 0 {
		fmt.Fprintf(env.Stdout, " (the first %d from before the chain, unlinked)", rep.Legacy)
	}
	fmt.Fprintln(env.Stdout)
	if rep.Events > 0 {
		fmt.Fprintf(env.Stdout, "head: seq %d event %s at %s\n", rep.Head.Seq, rep.Head.ID, rep.Head.At.UTC().Format("2006-01-02T15:04:05.000000Z07:00"))
		fmt.Fprintf(env.Stdout, "hash: %s\n", orDash(rep.Head.Hash))
	}
	return nil
}
