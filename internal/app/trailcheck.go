package app

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"backoffice/internal/auditlog"
	"backoffice/internal/store"
)

// errTrailHeld marks a command refused because the audit trail's tables are not what the
// migrations made (store.CheckTrailCatalog): it wrote nothing.
var errTrailHeld = errors.New("the audit trail's tables are not what the migrations made")

// refuseHeldTrail checks, before a command other than serve writes to the store, that the audit
// trail's tables are what the migrations made: a command that links an audit event into a trail
// whose tables may drop it would vouch for a trail that no longer records what it was told. It
// refuses, naming what it found, and the command then writes nothing (serve serves instead, with
// the trail held: checkTrailCatalog). A catalog that cannot be read refuses too.
func refuseHeldTrail(ctx context.Context, st *store.Store, what string) error {
	err := st.CheckTrailCatalog(ctx)
	var held *auditlog.TrailCatalogError
	switch {
	case errors.As(err, &held):
		return fmt.Errorf("%s refused, nothing was written: %w: %s (put them back as the migrations made them; see docs/compliance.md)", what, errTrailHeld, strings.Join(held.Findings, "; "))
	case err != nil:
		return fmt.Errorf("%s refused, nothing was written: %w", what, err)
	}
	return nil
}
