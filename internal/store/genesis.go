package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"

	"backoffice/internal/store/sqltx"
)

// Genesis is where the audit chain begins: the newest event written before the chain existed
// (LastUnlinked, 0 when there is none), sealed under a master key (KeyID, MAC). Every event after
// LastUnlinked must be linked: stripping links can no longer pass for history from before the
// chain.
type Genesis struct {
	LastUnlinked int64
	KeyID        string
	MAC          []byte
	// Found is false when the row is missing (removed: every migrated database has one).
	Found bool
}

// genesisMessage is what the genesis's seal authenticates, in the encoding of chainMessage.
func genesisMessage(lastUnlinked int64, keyID string) []byte {
	b := appendText(nil, "backoffice audit genesis v1")
	b = binary.BigEndian.AppendUint64(b, uint64(lastUnlinked))
	return appendText(b, keyID)
}

// check tells whether the genesis's seal holds under sig: ok, or why not. known is false when the
// seal was made under a key sig does not hold (nothing can be said).
func (g Genesis) check(sig ChainSigner) (ok, known bool) {
	if !g.Found || g.MAC == nil {
		return false, true
	}
	mac, err := sig.ChainMAC(g.KeyID, genesisMessage(g.LastUnlinked, g.KeyID))
	if err != nil {
		return false, false
	}
	return bytes.Equal(mac, g.MAC), true
}

func readGenesis(ctx context.Context, q *sqltx.Tx) (Genesis, error) {
	var g Genesis
	var keyID sql.NullString
	err := q.QueryRow(ctx, `SELECT last_unlinked_seq, chain_key_id, mac FROM audit_chain_genesis WHERE id = 1`).Scan(&g.LastUnlinked, &keyID, &g.MAC)
	if errors.Is(err, sql.ErrNoRows) {
		return g, nil
	}
	if err != nil {
		return g, fmt.Errorf("store: audit chain genesis: %w", err)
	}
	g.Found, g.KeyID = true, keyID.String
	return g, nil
}

// sealGenesis seals the genesis under the active key, and returns what it found: an unsealed
// genesis (the migration's, or one whose seal was removed) is sealed as it stands; one sealed under
// another key of the ring is sealed anew under the active key (after a rotation, so that the old
// key can leave the ring), but only if its seal holds. A genesis whose seal does not hold, or is
// under a key the ring lacks, is left for `audit verify` to report.
func sealGenesis(ctx context.Context, q *sqltx.Tx, sig ChainSigner, sealUnsealed bool) (Genesis, error) {
	g, err := readGenesis(ctx, q)
	if err != nil || !g.Found || (g.MAC == nil && !sealUnsealed) {
		return g, err
	}
	active := sig.ActiveKeyID()
	if g.MAC != nil {
		if ok, _ := g.check(sig); !ok || g.KeyID == active {
			return g, nil
		}
	}
	mac, err := sig.ChainMAC(active, genesisMessage(g.LastUnlinked, active))
	if err != nil {
		return g, fmt.Errorf("store: audit chain genesis: %w", err)
	}
	if _, err := q.Exec(ctx, `UPDATE audit_chain_genesis SET chain_key_id = ?, mac = ? WHERE id = 1`, active, mac); err != nil {
		return g, fmt.Errorf("store: audit chain genesis: %w", err)
	}
	return g, nil
}

// SealAuditGenesis seals the audit chain's genesis under the active key where it is under an
// older key, and, with sealUnsealed, where it is unsealed (see sealGenesis). It reports whether
// the genesis was unsealed, which after the first start of this release means its seal was
// removed: a caller that knows the chain was sealed before (checkpoints exist) leaves it so.
func (s *Store) SealAuditGenesis(ctx context.Context, sealUnsealed bool) (wasUnsealed bool, lastUnlinked int64, err error) {
	if s.signer == nil {
		return false, 0, ErrNoChainSigner
	}
	var g Genesis
	sig := s.signer
	err = s.tx(ctx, func(q *sqltx.Tx) error {
		g, err = sealGenesis(ctx, q, sig, sealUnsealed)
		return err
	})
	return g.Found && g.MAC == nil, g.LastUnlinked, err
}

// setGenesis names lastUnlinked as where the chain begins, sealed under the active key: an import
// into a database with no audit events, whose chain the file's then is.
func setGenesis(ctx context.Context, q *sqltx.Tx, sig ChainSigner, lastUnlinked int64) error {
	active := sig.ActiveKeyID()
	mac, err := sig.ChainMAC(active, genesisMessage(lastUnlinked, active))
	if err != nil {
		return fmt.Errorf("store: audit chain genesis: %w", err)
	}
	if _, err := q.Exec(ctx, `UPDATE audit_chain_genesis SET last_unlinked_seq = ?, chain_key_id = ?, mac = ? WHERE id = 1`, lastUnlinked, active, mac); err != nil {
		return fmt.Errorf("store: audit chain genesis: %w", err)
	}
	return nil
}

// AuditKeyNeeds says what of the audit chain still needs each master key other than active: how
// many events are linked under it after the last anchor made under active (a verify without that
// key could not check them), and the key the genesis is sealed under. keys status reads it before
// it calls a key removable.
func (s *Store) AuditKeyNeeds(ctx context.Context, active string) (unanchored map[string]int64, genesisKey string, err error) {
	unanchored = map[string]int64{}
	err = s.snapshot(ctx, func(q *sqltx.Tx) error {
		g, err := readGenesis(ctx, q)
		if err != nil {
			return err
		}
		genesisKey = g.KeyID
		anchored, err := anchoredSeqs(ctx, q, active)
		if err != nil {
			return err
		}
		var covered int64
		for _, seq := range anchored {
			covered = max(covered, seq)
		}
		keys, err := q.Query(ctx, `SELECT chain_key_id, COUNT(*) FROM audit_events WHERE seq > ? AND chain_key_id IS NOT NULL AND chain_key_id <> ? GROUP BY chain_key_id`, covered, active)
		if err != nil {
			return fmt.Errorf("store: audit keys: %w", err)
		}
		defer keys.Close()
		for keys.Next() {
			var id string
			var n int64
			if err := keys.Scan(&id, &n); err != nil {
				return fmt.Errorf("store: audit keys: %w", err)
			}
			unanchored[id] = n
		}
		return keys.Err()
	})
	return unanchored, genesisKey, err
}
