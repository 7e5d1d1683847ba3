package auditlog

import (
	"database/sql"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"backoffice/internal/domain"
)

// checkLanded names the first event that did not read back as written, and how: missing, a column
// that differs, a row the group did not write; a group that read back exactly passes.
func TestCheckLandedNamesWhatDiffers(t *testing.T) {
	at := time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)
	written := make([]domain.AuditEvent, 3)
	for i := range written {
		written[i] = domain.AuditEvent{ID: domain.ID("e" + string(rune('1'+i))), At: at, ActorUserID: "u", Action: "principal.decrypt",
			TargetID: "p", Outcome: domain.OutcomeGranted, Detail: "field ssn", Seq: int64(7 + i), ChainKeyID: "k",
			Hash: hex.EncodeToString([]byte{byte(i), 1, 2, 3})}
	}
	stored := func(change func(i int, a *auditStored)) []auditStored {
		var out []auditStored
		for i, e := range written {
			a := auditStored{e: e, hash: []byte{byte(i), 1, 2, 3}}
			a.seq.Int64, a.seq.Valid = e.Seq, true
			a.keyID.String, a.keyID.Valid = e.ChainKeyID, true
			if change != nil {
				change(i, &a)
			}
			out = append(out, a)
		}
		return out
	}
	for _, c := range []struct {
		name string
		got  []auditStored
		says string // "" when it landed
	}{
		{"as written", stored(nil), ""},
		{"the middle one missing", append(stored(nil)[:1], stored(nil)[2]), "seq 8 (event e2, principal.decrypt granted): missing"},
		{"the last one missing", stored(nil)[:2], "seq 9 (event e3, principal.decrypt granted): missing"},
		{"none", nil, "seq 7 (event e1, principal.decrypt granted): missing"},
		{"made denied", stored(func(i int, a *auditStored) {
			if i == 1 {
				a.e.Outcome = domain.OutcomeDenied
			}
		}), `seq 8 (event e2, principal.decrypt granted): its outcome reads "denied", not "granted"`},
		{"its link removed", stored(func(i int, a *auditStored) {
			if i == 2 {
				a.hash, a.e.Hash = nil, ""
			}
		}), "seq 9 (event e3, principal.decrypt granted): its hash reads"},
		{"its key id removed", stored(func(i int, a *auditStored) {
			if i == 0 {
				a.keyID.Valid = false
			}
		}), "seq 7 (event e1, principal.decrypt granted): its chain_key_id reads"},
		{"a row added after them", append(stored(nil), auditStored{e: domain.AuditEvent{ID: "x", Seq: 10}, seq: sql.NullInt64{Int64: 10, Valid: true}}), "seq 10: a row this group did not write (id x)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := checkLanded(written, c.got)
			switch {
			case c.says == "" && err != nil:
				t.Fatalf("checkLanded: %v, want nil", err)
			case c.says == "":
			case err == nil || !strings.Contains(err.Error(), c.says):
				t.Fatalf("checkLanded: %v, want it to say %q", err, c.says)
			case !errors.Is(err, ErrNotLanded) || !errors.Is(err, errUnavailable):
				t.Fatalf("checkLanded: %v is not ErrNotLanded and errUnavailable", err)
			}
		})
	}
}
