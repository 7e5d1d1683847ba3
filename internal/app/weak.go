package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"
	"time"

	"backoffice/internal/domain"
	"backoffice/internal/secrets"
	"backoffice/internal/store"
)

// allowWeakCredentialsVar lets serve start with weak credentials; its name says what it allows.
const allowWeakCredentialsVar = "BACKOFFICE_ALLOW_WEAK_CREDENTIALS"

// weakAllowed tells whether weak credentials may be served: when the operator says so, or in the
// demo's own database, whose keys are printed for all to read.
func (c Config) weakAllowed() bool {
	return c.AllowWeakCredentials || c.demoOwnDatabase()
}

// weakCredentials lists the usable credentials whose secrets are not known to be strong.
func weakCredentials(ctx context.Context, st *store.Store) ([]store.WeakCredential, error) {
	return st.WeakCredentials(ctx, time.Now(), secrets.MinCredentialBits)
}

// checkCredentialStrength refuses to serve while a usable credential is weak (a guessable secret
// would be served as if it were not), unless that is allowed; allowed, it warns.
func checkCredentialStrength(ctx context.Context, cfg Config, st *store.Store, log *slog.Logger) error {
	weak, err := weakCredentials(ctx, st)
	if err != nil || len(weak) == 0 {
		return err
	}
	if cfg.weakAllowed() {
		log.Warn("serving credentials whose secrets are not known to carry 128 random bits, as allowed; `backoffice keys status` names them",
			slog.Int("count", len(weak)), slog.String("first", describeWeak(weak[0])))
		return nil
	}
	return weakError(weak)
}

// weakError says how many credentials are weak, names the first, and what to do.
func weakError(weak []store.WeakCredential) error {
	return fmt.Errorf("%d usable credentials are not known to carry %d random bits (the first: %s; `backoffice keys status` lists them all): revoke them (`backoffice apikey revoke`, `backoffice session revoke`) and issue new ones, or set %s=true (serve --allow-weak-credentials) to serve them anyway",
		len(weak), secrets.MinCredentialBits, describeWeak(weak[0]), allowWeakCredentialsVar)
}

func describeWeak(w store.WeakCredential) string {
	return kindName(w.Kind) + " " + string(w.ID)
}

func kindName(kind string) string {
	if kind == domain.CredentialSession {
		return "session"
	}
	return "API key"
}

// printWeakCredentials lists the weak credentials for keys status, with why each is weak, and
// what serve does about them with this configuration (allowed: it starts and warns).
func printWeakCredentials(w io.Writer, weak []store.WeakCredential, allowed bool) error {
	if len(weak) == 0 {
		fmt.Fprintf(w, "Every usable API key and session carries at least %d random bits.\n", secrets.MinCredentialBits)
		return nil
	}
	consequence := fmt.Sprintf("serve refuses to start until they are revoked (or %s is set)", allowWeakCredentialsVar)
	if allowed {
		consequence = "serve starts with them, as allowed here (the demo's own database, or " + allowWeakCredentialsVar + "), and warns"
	}
	fmt.Fprintf(w, "\nWEAK CREDENTIALS: %d usable API keys and sessions are not known to carry %d random bits; %s:\n",
		len(weak), secrets.MinCredentialBits, consequence)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tID\tUSER\tSTRENGTH")
	for _, c := range weak {
		strength := "unknown (imported before secrets were judged)"
		if c.Bits != nil {
			strength = fmt.Sprintf("about %d bits", *c.Bits)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", strings.ReplaceAll(kindName(c.Kind), " ", "-"), c.ID, c.UserID, strength)
	}
	return tw.Flush()
}
