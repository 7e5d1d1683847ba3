package app

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"backoffice/internal/store"
)

// runCopy is `backoffice copy --to URL`: the configured database, whole, into an empty one of
// either engine (store.CopyTo). It needs no master key.
func runCopy(ctx context.Context, env Env, cfg Config, args []string) error {
	fs := newFlagSet("copy")
	cfg.databaseFlags(fs)
	to := fs.String("to", "", "the database to copy into: postgres://… or sqlite:PATH (made when missing); it must hold no records")
	if err := cfg.parseNoArgs(fs, args); err != nil {
		return err
	}
	if *to == "" {
		return usagef("want --to URL: the database to copy into (postgres://… or sqlite:PATH)")
	}
	if sameDatabase(cfg.DatabaseURL, *to) {
		return usagef("--to names the database to copy from (%s): give another one", shownURL(*to))
	}
	start := time.Now()
	src, err := openStore(ctx, cfg, nil)
	if err != nil {
		return copyFailed(*to, err)
	}
	defer src.Close()
	dst, err := store.Open(ctx, *to, store.WithPool(cfg.Pool))
	if err != nil {
		return copyFailed(*to, err)
	}
	defer dst.Close()
	if err := dst.Migrate(ctx); err != nil {
		return copyFailed(*to, err)
	}
	var rows int64
	var tables int
	err = src.CopyTo(ctx, dst, func(table string, n int64) {
		rows += n
		tables++
		fmt.Fprintf(env.Stderr, "copied %s: %d rows\n", table, n)
	})
	if err != nil {
		return copyFailed(*to, err)
	}
	fmt.Fprintf(env.Stdout, "copied %d rows of %d tables from %s to %s (%s) in %s\n", rows, tables,
		src.Engine(), dst.Engine(), shownURL(*to), time.Since(start).Round(time.Millisecond))
	return nil
}

// copyFailed is every failure of a copy, whichever step it came from, ending alike: the copy is
// all or nothing.
func copyFailed(to string, err error) error {
	return fmt.Errorf("copy to %s: %w (nothing was copied)", shownURL(to), err)
}

// shownURL is a database URL without its password; one that does not parse is named by its flag,
// as the copy's messages read.
func shownURL(s string) string {
	if strings.HasPrefix(s, "sqlite:") {
		return s
	}
	return redactedURLOr(s, "the --to URL")
}

// redactedURL is a URL fit for a log line or an error (see redactedURLOr).
func redactedURL(s string) string {
	return redactedURLOr(s, "(a URL that does not parse)")
}

// redactedURLOr is s with its password, in the user part or as a password query parameter (which
// PostgreSQL's URLs take), as xxxxx; unparsed in place of what cannot be redacted and may hold a
// password where none is looked for: a URL that does not parse, or one with no scheme (a
// connection string of key=value words parses as a path). A query that does not parse is left
// out whole, and so is a fragment.
func redactedURLOr(s, unparsed string) string {
	if s == "" {
		return ""
	}
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" || (u.Opaque != "" && u.Scheme != "sqlite") {
		return unparsed
	}
	u.Fragment, u.RawFragment = "", ""
	if u.RawQuery != "" {
		q, err := url.ParseQuery(u.RawQuery)
		switch {
		case err != nil:
			u.RawQuery = "(a query that does not parse)"
		case q.Has("password"):
			q.Set("password", "xxxxx")
			u.RawQuery = q.Encode()
		}
	}
	return u.Redacted()
}

// sameDatabase tells two URLs that name one database as written (a SQLite file by its absolute
// path). A source copied into itself would be refused as not empty anyway.
func sameDatabase(a, b string) bool {
	pa, okA := strings.CutPrefix(a, "sqlite:")
	pb, okB := strings.CutPrefix(b, "sqlite:")
	if okA && okB {
		fa, errA := filepath.Abs(pa)
		fb, errB := filepath.Abs(pb)
		return errA == nil && errB == nil && fa == fb
	}
	return a == b
}
