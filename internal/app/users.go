package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"backoffice/internal/dataset"
	"backoffice/internal/domain"
	"backoffice/internal/store"
)

// Audit actions of the user commands.
const (
	actionUserCreate   = "user.create"
	actionUserDisable  = "user.disable"
	actionUserEnable   = "user.enable"
	actionUserGrant    = "user.grant"
	actionUserWithdraw = "user.withdraw"
)

func runUser(ctx context.Context, env Env, cfg Config, args []string) error {
	return runGroup(ctx, env, cfg, "user", args, map[string]runFunc{
		"create": runUserCreate, "list": runUserList,
		"disable": runUserDisable, "enable": runUserEnable,
		"grant": runUserGrant, "withdraw": runUserWithdraw})
}

// permissionsFlag collects --permission, once per permission.
type permissionsFlag struct{ dst *[]domain.Permission }

func (p permissionsFlag) String() string {
	if p.dst == nil {
		return ""
	}
	return domain.FormatPermissions(*p.dst)
}

func (p permissionsFlag) Set(v string) error {
	*p.dst = append(*p.dst, domain.Permission(v))
	return nil
}

// userFieldFlags names the flag of each field a user command sets, for dataset.CheckUser's errors.
var userFieldFlags = map[string]string{"id": "--id", "email": "--email", "partnerId": "--partner", "externalId": "--external-id"}

// checkUser checks a user by import's rules (dataset.CheckUser), its error in the command line's
// words: the flag at fault, or the permission.
func checkUser(u *domain.User) error {
	err := dataset.CheckUser(u)
	var de *dataset.Error
	if !errors.As(err, &de) {
		return err
	}
	if f, ok := userFieldFlags[de.Path]; ok {
		return usagef("%s: %s", f, de.Problem)
	}
	if strings.HasPrefix(de.Path, "permissions[") {
		return usagef("%s; want %s", de.Problem, knownPermissionsText())
	}
	return usagef("%v", err)
}

func knownPermissionsText() string {
	return domain.FormatPermissions(domain.KnownPermissions())
}

func runUserCreate(ctx context.Context, env Env, cfg Config, args []string) error {
	fs := newFlagSet("user create")
	cfg.databaseFlags(fs)
	email := fs.String("email", "", "the user's email address (required)")
	partner := fs.String("partner", "", "id of the partner whose objects alone the user sees; none: a staff user, who sees every partner's")
	var perms []domain.Permission
	fs.Var(permissionsFlag{&perms}, "permission", "a permission to grant, once per permission: "+knownPermissionsText()+" (* grants all)")
	external := fs.String("external-id", "", "the id the identity provider knows the user by (BACKOFFICE_OAUTH_USER_MATCH=external_id)")
	id := fs.String("id", "", "the user's id, a uuid, as an upstream system knows it; default: a new one")
	actorID := actorFlag(fs)
	if err := cfg.parseNoArgs(fs, args); err != nil {
		return err
	}
	if *email == "" {
		return usagef("--email is required")
	}
	u := domain.User{ID: domain.ID(*id), Email: *email, Permissions: slices.Compact(perms)}
	if u.ID == "" {
		u.ID = domain.NewID()
	}
	if u.Permissions == nil {
		u.Permissions = []domain.Permission{}
	}
	if *partner != "" {
		p := domain.ID(*partner)
		u.PartnerID = &p
	}
	if *external != "" {
		u.ExternalID = external
	}
	if err := checkUser(&u); err != nil {
		return err
	}
	st, actor, err := openStoreAs(ctx, cfg, *actorID)
	if err != nil {
		return err
	}
	defer st.Close()
	event := domain.AuditEvent{At: time.Now().UTC(), ActorUserID: actor, Action: actionUserCreate, TargetID: string(u.ID),
		Outcome: domain.OutcomeGranted, Detail: fmt.Sprintf("email %q, %s, permissions [%s]", u.Email, userScope(u), domain.FormatPermissions(u.Permissions))}
	switch err := st.CreateUser(ctx, u, event); {
	case errors.Is(err, domain.ErrNotFound):
		return fmt.Errorf("--partner: no partner with id %s (partners come from a dataset import)", *u.PartnerID)
	case errors.Is(err, store.ErrEmailTaken):
		return fmt.Errorf("--email: %s is taken: %w", u.Email, err)
	case errors.Is(err, store.ErrUserClash):
		return fmt.Errorf("a user has the id %s or the external id already", u.ID)
	case err != nil:
		return err
	}
	// The id alone goes to standard output, so ID=$(backoffice user create …) captures it.
	fmt.Fprintf(env.Stderr, "created user %s (%s, %s) with permissions [%s]\n", u.ID, u.Email, userScope(u), domain.FormatPermissions(u.Permissions))
	warnStaffOnly(env.Stderr, u)
	fmt.Fprintln(env.Stdout, u.ID)
	return nil
}

// userScope says whose objects a user sees.
func userScope(u domain.User) string {
	if u.PartnerID == nil {
		return "staff"
	}
	return "partner " + string(*u.PartnerID)
}

// warnStaffOnly says when a partner's user holds a permission only staff may use.
func warnStaffOnly(w io.Writer, u domain.User) {
	if u.PartnerID != nil && slices.Contains(u.Permissions, domain.PermReadAuditEvents) {
		fmt.Fprintf(w, "note: %s reads the audit list only as a staff user (no partner); this user is refused it\n", domain.PermReadAuditEvents)
	}
}

func runUserList(ctx context.Context, env Env, cfg Config, args []string) error {
	fs := newFlagSet("user list")
	cfg.databaseFlags(fs)
	if err := cfg.parseNoArgs(fs, args); err != nil {
		return err
	}
	st, err := openStore(ctx, cfg, nil)
	if err != nil {
		return err
	}
	defer st.Close()
	users, err := st.ListUsers(ctx)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tEMAIL\tPARTNER\tPERMISSIONS\tEXTERNAL ID\tDISABLED")
	for _, u := range users {
		partner := "- (staff)"
		if u.PartnerID != nil {
			partner = string(*u.PartnerID)
		}
		disabled := "-"
		if u.Disabled {
			disabled = "disabled"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", u.ID, u.Email, partner, orDash(domain.FormatPermissions(u.Permissions)), orDash(deref(u.ExternalID)), disabled)
	}
	return tw.Flush()
}

func runUserDisable(ctx context.Context, env Env, cfg Config, args []string) error {
	return changeUser(ctx, env, cfg, args, "user disable", 0, actionUserDisable, func(u *domain.User, _ []domain.Permission) (string, error) {
		u.Disabled = true
		return "disabled: every credential of the user is refused", nil
	})
}

func runUserEnable(ctx context.Context, env Env, cfg Config, args []string) error {
	return changeUser(ctx, env, cfg, args, "user enable", 0, actionUserEnable, func(u *domain.User, _ []domain.Permission) (string, error) {
		u.Disabled = false
		return "enabled", nil
	})
}

func runUserGrant(ctx context.Context, env Env, cfg Config, args []string) error {
	return changeUser(ctx, env, cfg, args, "user grant", 1, actionUserGrant, func(u *domain.User, perms []domain.Permission) (string, error) {
		for _, p := range perms {
			if !slices.Contains(u.Permissions, p) {
				u.Permissions = append(u.Permissions, p)
			}
		}
		return "granted " + domain.FormatPermissions(perms) + "; now [" + domain.FormatPermissions(u.Permissions) + "]", nil
	})
}

func runUserWithdraw(ctx context.Context, env Env, cfg Config, args []string) error {
	return changeUser(ctx, env, cfg, args, "user withdraw", 1, actionUserWithdraw, func(u *domain.User, perms []domain.Permission) (string, error) {
		if slices.Contains(u.Permissions, domain.PermAll) && !slices.Contains(perms, domain.PermAll) {
			return "", fmt.Errorf("user %s holds * (every permission): withdraw * and grant the ones to keep", u.ID)
		}
		u.Permissions = slices.DeleteFunc(u.Permissions, func(p domain.Permission) bool { return slices.Contains(perms, p) })
		return "withdrew " + domain.FormatPermissions(perms) + "; now [" + domain.FormatPermissions(u.Permissions) + "]", nil
	})
}

// userEdit changes a user as a command asks (its permission arguments in perms) and says what it
// did, for the audit event; an error refuses the change.
type userEdit func(u *domain.User, perms []domain.Permission) (string, error)

// changeUser runs a command that changes one user: ID, then minPerms or more permissions. The
// change is checked by import's rules and written with its audit event; one that leaves the user
// as it was writes neither and says so.
func changeUser(ctx context.Context, env Env, cfg Config, args []string, cmd string, minPerms int, action string, edit userEdit) error {
	fs := newFlagSet(cmd)
	cfg.databaseFlags(fs)
	actorID := actorFlag(fs)
	pos, err := cfg.parseArgs(fs, args)
	if err != nil {
		return err
	}
	switch {
	case minPerms == 0 && len(pos) != 1:
		return usagef("want one ID")
	case minPerms > 0 && len(pos) < 1+minPerms:
		return usagef("want an ID and a permission or more: %s", knownPermissionsText())
	}
	id, err := parseIDArg("ID", pos[0])
	if err != nil {
		return err
	}
	var perms []domain.Permission
	for _, p := range pos[1:] {
		if !domain.Permission(p).Known() {
			return usagef("unknown permission %q; want %s", p, knownPermissionsText())
		}
		perms = append(perms, domain.Permission(p))
	}
	st, actor, err := openStoreAs(ctx, cfg, *actorID)
	if err != nil {
		return err
	}
	defer st.Close()
	var refused error
	event := domain.AuditEvent{At: time.Now().UTC(), ActorUserID: actor, Action: action, TargetID: string(id), Outcome: domain.OutcomeGranted}
	u, err := st.ChangeUser(ctx, id, func(u *domain.User) string {
		detail, err := edit(u, perms)
		if err != nil {
			refused = err
			return ""
		}
		return detail
	}, event)
	switch {
	case refused != nil:
		return refused
	case errors.Is(err, domain.ErrNotFound):
		return fmt.Errorf("no user with id %s", id)
	case errors.Is(err, store.ErrUnchanged):
		fmt.Fprintf(env.Stdout, "user %s is that way already: %s\n", id, userState(u))
		return nil
	case err != nil:
		return err
	}
	fmt.Fprintf(env.Stdout, "user %s: %s\n", id, userState(u))
	warnStaffOnly(env.Stderr, u)
	return nil
}

// userState is a user's permissions and flag, as the change commands report them.
func userState(u domain.User) string {
	state := "enabled"
	if u.Disabled {
		state = "disabled (every credential refused from the next request on)"
	}
	return fmt.Sprintf("%s, permissions [%s]", state, domain.FormatPermissions(u.Permissions))
}
