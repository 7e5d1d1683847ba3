package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"backoffice/internal/domain"
	"backoffice/internal/secrets"
	"backoffice/internal/store"
)

// Audit actions of the credential commands.
const (
	actionAPIKeyCreate  = "api_key.create"
	actionAPIKeyRevoke  = "api_key.revoke"
	actionSessionCreate = "session.create"
	actionSessionRevoke = "session.revoke"
)

// maxNameLength bounds a key's name: it is a label for a table, not a document.
const maxNameLength = 100

// defaultSessionTTL is a working day and a bit: long enough for a shift, short enough to lapse.
const defaultSessionTTL = 24 * time.Hour

func runAPIKey(ctx context.Context, env Env, cfg Config, args []string) error {
	return runGroup(ctx, env, cfg, "apikey", args, map[string]runFunc{
		"create": runAPIKeyCreate, "list": runAPIKeyList, "revoke": runAPIKeyRevoke})
}

func runSession(ctx context.Context, env Env, cfg Config, args []string) error {
	return runGroup(ctx, env, cfg, "session", args, map[string]runFunc{
		"create": runSessionCreate, "list": runSessionList, "revoke": runSessionRevoke})
}

// actorFlag registers --actor, shared by every command that writes an audit event.
func actorFlag(fs *flag.FlagSet) *string {
	return fs.String("actor", "", "user id to record as the actor in the audit trail (default: the system actor "+string(domain.SystemActorID)+")")
}

// resolveActor turns --actor into the audit actor. A named actor must be a known user: a typo must
// not put a stranger into the audit trail.
func resolveActor(ctx context.Context, st *store.Store, flagValue string) (domain.ID, error) {
	if flagValue == "" {
		return domain.SystemActorID, nil
	}
	id, err := domain.ParseID(flagValue)
	if err != nil {
		return "", usagef("--actor: %q is not a uuid", flagValue)
	}
	ok, err := st.UserExists(ctx, id)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", fmt.Errorf("--actor: no user with id %s", id)
	}
	return id, nil
}

// openStoreAs opens the store for a command that writes audit events, checks that the trail's
// tables are what the migrations made (refuseHeldTrail), and resolves its --actor there; the
// store is closed again if either is refused.
func openStoreAs(ctx context.Context, cfg Config, actorFlag string) (*store.Store, domain.ID, error) {
	ring, err := masterRing(cfg)
	if err != nil {
		return nil, "", fmt.Errorf("audit events are chained under the master key ring: %w", err)
	}
	st, err := openStore(ctx, cfg, ring)
	if err != nil {
		return nil, "", err
	}
	if err := refuseHeldTrail(ctx, st, "this command"); err != nil {
		st.Close()
		return nil, "", err
	}
	actor, err := resolveActor(ctx, st, actorFlag)
	if err != nil {
		st.Close()
		return nil, "", err
	}
	return st, actor, nil
}

// parseIDArg parses a required uuid flag or argument.
func parseIDArg(name, v string) (domain.ID, error) {
	if v == "" {
		return "", usagef("%s is required", name)
	}
	id, err := domain.ParseID(v)
	if err != nil {
		return "", usagef("%s: %q is not a uuid", name, v)
	}
	return id, nil
}

// optionalIDArg parses a uuid flag that may be left out ("" stays "").
func optionalIDArg(name, v string) (domain.ID, error) {
	if v == "" {
		return "", nil
	}
	return parseIDArg(name, v)
}

// parseExpiry reads --expires: empty (never), a lifetime (Go duration such as 720h, or whole days
// such as 90d), a date (2027-01-31, meaning 00:00 UTC that day) or an RFC 3339 time. It must lie
// in the future.
func parseExpiry(v string, now time.Time) (*time.Time, error) {
	if v == "" {
		return nil, nil
	}
	at, err := expiryTime(v, now)
	if err != nil {
		return nil, usagef("--expires: %q is not a duration (720h, 90d), a date (2027-01-31) or an RFC 3339 time", v)
	}
	if !at.After(now) {
		return nil, usagef("--expires: %s is not in the future", at.Format(time.RFC3339))
	}
	at = at.UTC()
	if at.Year() > 9999 {
		// Kept in microseconds, a later time would wrap around to another expiry than the one printed.
		return nil, usagef("--expires: %q is past the year 9999, the latest a credential may expire", v)
	}
	return &at, nil
}

func expiryTime(v string, now time.Time) (time.Time, error) {
	if days, ok := strings.CutSuffix(v, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n <= 0 {
			return time.Time{}, errors.New("bad days")
		}
		return now.AddDate(0, 0, n), nil
	}
	if d, err := time.ParseDuration(v); err == nil {
		return now.Add(d), nil
	}
	if t, err := time.Parse(time.DateOnly, v); err == nil {
		return t, nil
	}
	return time.Parse(time.RFC3339, v)
}

// checkName keeps a key's name printable on one table row.
func checkName(name string) error {
	if len(name) > maxNameLength {
		return usagef("--name is longer than %d bytes", maxNameLength)
	}
	for _, r := range name {
		if !unicode.IsPrint(r) {
			return usagef("--name may hold only printable characters")
		}
	}
	return nil
}

func runAPIKeyCreate(ctx context.Context, env Env, cfg Config, args []string) error {
	fs := newFlagSet("apikey create")
	cfg.databaseFlags(fs)
	user := fs.String("user", "", "id of the user the key acts as (required)")
	expires := fs.String("expires", "", "lifetime (720h, 90d) or end (2027-01-31, RFC 3339); default: never")
	name := fs.String("name", "", "what the key is for, shown by apikey list")
	actorID := actorFlag(fs)
	if err := cfg.parseNoArgs(fs, args); err != nil {
		return err
	}
	now := time.Now().UTC()
	userID, err := parseIDArg("--user", *user)
	if err != nil {
		return err
	}
	expiresAt, err := parseExpiry(*expires, now)
	if err != nil {
		return err
	}
	if err := checkName(*name); err != nil {
		return err
	}
	st, actor, err := openStoreAs(ctx, cfg, *actorID)
	if err != nil {
		return err
	}
	defer st.Close()
	key, info, err := issueAPIKey(ctx, st, store.NewAPIKey{UserID: userID, Name: *name, CreatedAt: now, ExpiresAt: expiresAt}, actor)
	if err != nil {
		return err
	}
	// The key alone goes to standard output, so KEY=$(backoffice apikey create …) captures it; the
	// rest is for the person at the terminal.
	fmt.Fprintf(env.Stderr, "created API key %s (prefix %s) for user %s, expires %s.\nThe key is shown this once; it cannot be recovered:\n",
		info.ID, info.Prefix, info.UserID, orNever(info.ExpiresAt))
	fmt.Fprintln(env.Stdout, key)
	return nil
}

// issueAPIKey makes a key, stores its hash with its audit event, and returns the key. A random
// prefix can, rarely, be taken already: then it makes another.
func issueAPIKey(ctx context.Context, st *store.Store, k store.NewAPIKey, actor domain.ID) (string, store.NewAPIKey, error) {
	for range 3 {
		key, prefix := secrets.NewAPIKey()
		k.ID, k.Prefix, k.Hash = domain.NewID(), prefix, secrets.HashCredential(domain.CredentialAPIKey, key)
		k.SecretBits = secrets.IssuedCredentialBits
		event := domain.AuditEvent{At: k.CreatedAt, ActorUserID: actor, Action: actionAPIKeyCreate, TargetID: string(k.ID),
			Outcome: domain.OutcomeGranted, Detail: fmt.Sprintf("user %s, prefix %s, name %q, expires %s", k.UserID, prefix, k.Name, orNever(k.ExpiresAt))}
		err := st.CreateAPIKey(ctx, k, event)
		if errors.Is(err, store.ErrCredentialClash) {
			continue
		}
		if errors.Is(err, domain.ErrNotFound) {
			return "", k, fmt.Errorf("--user: no user with id %s", k.UserID)
		}
		return key, k, err
	}
	return "", k, errors.New("could not find a free key prefix; try again")
}

func orNever(t *time.Time) string {
	if t == nil {
		return "never"
	}
	return t.UTC().Format(time.RFC3339)
}

func runAPIKeyList(ctx context.Context, env Env, cfg Config, args []string) error {
	fs := newFlagSet("apikey list")
	cfg.databaseFlags(fs)
	user := fs.String("user", "", "only the keys of this user id")
	prefix := fs.String("prefix", "", "only the key with this prefix (the 8 characters after bo_; a whole key works too, only its prefix is read)")
	if err := cfg.parseNoArgs(fs, args); err != nil {
		return err
	}
	userID, err := optionalIDArg("--user", *user)
	if err != nil {
		return err
	}
	f := store.APIKeyFilter{UserID: userID}
	if *prefix != "" {
		p, ok := secrets.APIKeyPrefix(*prefix)
		if !ok {
			return usagef("--prefix: want the 8 characters after bo_ (a-z, 2-7)")
		}
		f.Prefix = p
	}
	st, err := openStore(ctx, cfg, nil)
	if err != nil {
		return err
	}
	defer st.Close()
	keys, err := st.ListAPIKeys(ctx, f)
	if err != nil {
		return err
	}
	return printAPIKeys(env.Stdout, keys)
}

// printAPIKeys writes the key table. There is no secret in it to leak: the store has none.
func printAPIKeys(w io.Writer, keys []store.APIKeyInfo) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tUSER\tNAME\tPREFIX\tCREATED\tEXPIRES\tLAST USED\tREVOKED")
	for _, k := range keys {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.UserID, orDash(k.Name), orDash(deref(k.Prefix)),
			timeOrDash(k.CreatedAt), orNever(k.ExpiresAt), timeOrDash(k.LastUsedAt), timeOrDash(k.RevokedAt))
	}
	return tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func timeOrDash(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func runAPIKeyRevoke(ctx context.Context, env Env, cfg Config, args []string) error {
	return runRevoke(ctx, env, cfg, args, "apikey revoke", "API key", actionAPIKeyRevoke, (*store.Store).RevokeAPIKey)
}

func runSessionRevoke(ctx context.Context, env Env, cfg Config, args []string) error {
	return runRevoke(ctx, env, cfg, args, "session revoke", "session", actionSessionRevoke, (*store.Store).RevokeSession)
}

type revokeFunc func(st *store.Store, ctx context.Context, id domain.ID, at time.Time, event domain.AuditEvent) error

// runRevoke revokes one credential by id. Revoking a revoked credential changes nothing and is not
// an error: the wanted state holds.
func runRevoke(ctx context.Context, env Env, cfg Config, args []string, cmd, what, action string, revoke revokeFunc) error {
	fs := newFlagSet(cmd)
	cfg.databaseFlags(fs)
	actorID := actorFlag(fs)
	pos, err := cfg.parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("want one ID")
	}
	id, err := parseIDArg("ID", pos[0])
	if err != nil {
		return err
	}
	st, actor, err := openStoreAs(ctx, cfg, *actorID)
	if err != nil {
		return err
	}
	defer st.Close()
	now := time.Now().UTC()
	event := domain.AuditEvent{At: now, ActorUserID: actor, Action: action, TargetID: string(id), Outcome: domain.OutcomeGranted, Detail: "revoked"}
	switch err := revoke(st, ctx, id, now, event); {
	case errors.Is(err, domain.ErrNotFound):
		return fmt.Errorf("no %s with id %s", what, id)
	case errors.Is(err, store.ErrAlreadyRevoked):
		fmt.Fprintf(env.Stdout, "%s %s was already revoked\n", what, id)
		return nil
	case err != nil:
		return err
	}
	fmt.Fprintf(env.Stdout, "revoked %s %s: every replica refuses it from the next request on\n", what, id)
	return nil
}

func runSessionCreate(ctx context.Context, env Env, cfg Config, args []string) error {
	fs := newFlagSet("session create")
	cfg.databaseFlags(fs)
	user := fs.String("user", "", "id of the user the session acts as (required)")
	ttl := fs.Duration("ttl", defaultSessionTTL, "how long the session lasts")
	actorID := actorFlag(fs)
	if err := cfg.parseNoArgs(fs, args); err != nil {
		return err
	}
	userID, err := parseIDArg("--user", *user)
	if err != nil {
		return err
	}
	if *ttl <= 0 {
		return usagef("--ttl must be positive")
	}
	st, actor, err := openStoreAs(ctx, cfg, *actorID)
	if err != nil {
		return err
	}
	defer st.Close()
	now := time.Now().UTC()
	token, s, err := issueSession(ctx, st, store.NewSession{UserID: userID, CreatedAt: now, ExpiresAt: now.Add(*ttl)}, actor)
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stderr, "created session %s for user %s, expires %s.\nThe token is shown this once; it cannot be recovered:\n",
		s.ID, s.UserID, s.ExpiresAt.Format(time.RFC3339))
	fmt.Fprintln(env.Stdout, token)
	return nil
}

func runSessionList(ctx context.Context, env Env, cfg Config, args []string) error {
	fs := newFlagSet("session list")
	cfg.databaseFlags(fs)
	user := fs.String("user", "", "only the sessions of this user id")
	if err := cfg.parseNoArgs(fs, args); err != nil {
		return err
	}
	userID, err := optionalIDArg("--user", *user)
	if err != nil {
		return err
	}
	st, err := openStore(ctx, cfg, nil)
	if err != nil {
		return err
	}
	defer st.Close()
	sessions, err := st.ListSessions(ctx, userID)
	if err != nil {
		return err
	}
	return printSessions(env.Stdout, sessions)
}

// printSessions writes the session table; like the key table, it has no secret to leak.
func printSessions(w io.Writer, sessions []store.SessionInfo) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tUSER\tCREATED\tEXPIRES\tREVOKED")
	for _, s := range sessions {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.ID, s.UserID, timeOrDash(s.CreatedAt), timeOrDash(&s.ExpiresAt), timeOrDash(s.RevokedAt))
	}
	return tw.Flush()
}

// issueSession makes a token and stores its hash with its audit event.
func issueSession(ctx context.Context, st *store.Store, s store.NewSession, actor domain.ID) (string, store.NewSession, error) {
	for range 3 {
		token := secrets.NewSessionToken()
		s.ID, s.Hash = domain.NewID(), secrets.HashCredential(domain.CredentialSession, token)
		s.SecretBits = secrets.IssuedCredentialBits
		event := domain.AuditEvent{At: s.CreatedAt, ActorUserID: actor, Action: actionSessionCreate, TargetID: string(s.ID),
			Outcome: domain.OutcomeGranted, Detail: fmt.Sprintf("user %s, expires %s", s.UserID, s.ExpiresAt.Format(time.RFC3339))}
		err := st.CreateSession(ctx, s, event)
		if errors.Is(err, store.ErrCredentialClash) {
			continue
		}
		if errors.Is(err, domain.ErrNotFound) {
			return "", s, fmt.Errorf("--user: no user with id %s", s.UserID)
		}
		return token, s, err
	}
	return "", s, errors.New("could not store a fresh session token; try again")
}
