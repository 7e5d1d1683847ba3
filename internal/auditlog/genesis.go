package auditlog

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"

	"backoffice/internal/sqltx"
	"backoffice/internal/trail"
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
	// keyed is false when chain_key_id is NULL (as the migration left it, unsealed).
	keyed bool
	// bad names a column that does not hold a value of its kind ("" when every one does).
	bad string
}

// genesisMessage is what the genesis's seal authenticates, in the encoding of chainMessage.
func genesisMessage(lastUnlinked int64, keyID string) []byte {
	b := trail.AppendText(nil, "backoffice audit genesis v1")
	b = binary.BigEndian.AppendUint64(b, uint64(lastUnlinked))
	return trail.AppendText(b, keyID)
}

// genesisVerdict is what a check of the genesis under a ring found.
type genesisVerdict int

const (
	// genesisSealed: sealed under a key of the ring, and the seal holds.
	genesisSealed genesisVerdict = iota
	// genesisUnsealed: no key id and no seal, as the migration that made the row left it.
	genesisUnsealed
	// genesisUnknownKey: sealed under a key the ring does not hold, and under none it holds.
	genesisUnknownKey
	// genesisBroken: missing, unreadable, altered, relabelled, or its seal removed.
	genesisBroken
)

// judge checks the genesis under ver, and says why when it is not sealed under a key ver holds.
// A seal that holds under a key of the ring other than the one the row names was relabelled: the
// ring tries each of its keys, so a key id changed by hand is a break, not a key it lacks.
func (g Genesis) judge(ver ChainVerifier) (genesisVerdict, string) {
	switch {
	case !g.Found:
		return genesisBroken, "the genesis record (where the chain begins) is missing: removed from audit_chain_genesis"
	case g.bad != "":
		return genesisBroken, fmt.Sprintf("the genesis record is unreadable (%s): altered", g.bad)
	case !g.keyed && g.MAC == nil:
		return genesisUnsealed, fmt.Sprintf("the genesis record (the chain begins after seq %d) is not sealed", g.LastUnlinked)
	case g.MAC == nil:
		return genesisBroken, fmt.Sprintf("the genesis record names key %q but has no seal: its seal was removed", g.KeyID)
	case !g.keyed || g.KeyID == "":
		return genesisBroken, "the genesis record has a seal but names no key: altered"
	}
	mac, err := ver.ChainMAC(g.KeyID, genesisMessage(g.LastUnlinked, g.KeyID))
	switch {
	case err == nil && bytes.Equal(mac, g.MAC):
		return genesisSealed, ""
	case err == nil:
		return genesisBroken, fmt.Sprintf("the genesis record (the chain begins after seq %d) does not match its seal: altered", g.LastUnlinked)
	}
	for _, id := range ver.KeyIDs() {
		if mac, err := ver.ChainMAC(id, genesisMessage(g.LastUnlinked, id)); err == nil && bytes.Equal(mac, g.MAC) {
			return genesisBroken, fmt.Sprintf("the genesis record is sealed under key %s but names key %q: relabelled", id, g.KeyID)
		}
	}
	return genesisUnknownKey, fmt.Sprintf("the genesis record is sealed under key %q, which the ring does not hold", g.KeyID)
}

// readGenesis reads the genesis row as it is, whatever its columns hold.
func readGenesis(ctx context.Context, q *sqltx.Tx) (Genesis, error) {
	var last, keyID, mac any
	err := q.QueryRow(ctx, `SELECT last_unlinked_seq, chain_key_id, mac FROM audit_chain_genesis WHERE id = 1`).Scan(&last, &keyID, &mac)
	if errors.Is(err, sql.ErrNoRows) {
		return Genesis{}, nil
	}
	if err != nil {
		return Genesis{}, fmt.Errorf("store: audit chain genesis: %w", err)
	}
	g := Genesis{Found: true}
	var l looseRow
	var numbered bool
	g.LastUnlinked, numbered = l.number(last, "last_unlinked_seq")
	switch {
	case !numbered:
		l.note("last_unlinked_seq is NULL")
	case g.LastUnlinked < 0:
		l.note("last_unlinked_seq is negative")
	}
	g.KeyID, g.keyed = l.text(keyID, "chain_key_id", true)
	g.MAC = l.bytes(mac, "mac")
	g.bad = l.faults()
	return g, nil
}

// SealAuditGenesis seals the genesis as v proved it (the chain begins after v's last unlinked
// event) under the active key, unless it is sealed under the active key already. It is how `keys
// rewrap` moves the seal to the new key, after verifying the whole chain, and how a genesis the
// migration left unsealed is sealed (SealUnsealedAuditGenesis). It writes only if the row still
// names what v proved; it reports whether it wrote.
func (s *Log) SealAuditGenesis(ctx context.Context, v Verified) (sealed bool, err error) {
	sig := s.chainSigner()
	if sig == nil {
		return false, ErrNoChainSigner
	}
	err = s.db.Tx(ctx, func(q *sqltx.Tx) error {
		sealed, err = sealGenesis(ctx, q, sig, v)
		return err
	})
	return sealed, err
}

// sealGenesis is SealAuditGenesis in the transaction q.
func sealGenesis(ctx context.Context, q *sqltx.Tx, sig ChainSigner, v Verified) (sealed bool, err error) {
	if err := v.sealable(); err != nil {
		return false, err
	}
	g, err := readGenesis(ctx, q)
	if err != nil {
		return false, err
	}
	if !g.Found || g.bad != "" || g.LastUnlinked != v.lastUnlinked {
		return false, fmt.Errorf("store: audit chain genesis: changed since the chain was verified; run `backoffice audit verify`")
	}
	active := sig.ActiveKeyID()
	if g.keyed && g.KeyID == active {
		if mac, err := sig.ChainMAC(active, genesisMessage(g.LastUnlinked, active)); err == nil && bytes.Equal(mac, g.MAC) {
			return false, nil
		}
	}
	mac, err := sig.ChainMAC(active, genesisMessage(v.lastUnlinked, active))
	if err != nil {
		return false, fmt.Errorf("store: audit chain genesis: %w", err)
	}
	if _, err := q.Exec(ctx, `UPDATE audit_chain_genesis SET chain_key_id = ?, mac = ? WHERE id = 1 AND last_unlinked_seq = ?`, active, mac, v.lastUnlinked); err != nil {
		return false, fmt.Errorf("store: audit chain genesis: %w", err)
	}
	if err := genesisLanded(ctx, q, v.lastUnlinked, active, mac); err != nil {
		return false, err
	}
	return true, nil
}

// genesisLanded reads the genesis back in q, the transaction that sealed it, and fails unless it
// holds the seal as written: a trigger or a rule may swallow the update and report success, and a
// seal said to be moved to the new key lets the old key go.
func genesisLanded(ctx context.Context, q *sqltx.Tx, lastUnlinked int64, keyID string, mac []byte) error {
	g, err := readGenesis(ctx, q)
	if err != nil {
		return err
	}
	if !g.Found || g.bad != "" || g.LastUnlinked != lastUnlinked || !g.keyed || g.KeyID != keyID || !bytes.Equal(g.MAC, mac) {
		return fmt.Errorf("store: audit chain genesis: its seal did not read back as written, so nothing was sealed (something in the database drops or alters writes to audit_chain_genesis: a trigger, a rule or a view in its place): %w", ErrNotLanded)
	}
	return nil
}

// GenesisOpening is what SealUnsealedAuditGenesis found and did.
type GenesisOpening struct {
	// Unsealed: the genesis was unsealed (no key id, no seal), as the migration that made it
	// left it. LastUnlinked is where it says the chain begins.
	Unsealed     bool
	LastUnlinked int64
	// Sealed: it is sealed now. OnTrust: sealed although nothing proved where the chain begins
	// (no link and no checkpoint covers the trail: a trail from before the chain, first opened).
	Sealed, OnTrust bool
	// Left is why it was left unsealed (nil when it was sealed, or was not unsealed).
	Left error
}

// SealUnsealedAuditGenesis seals a genesis the migration left unsealed, once a walk of the whole
// trail under ver (against the checkpoints kept outside the database, which outside reads only
// then) verifies, and a checkpoint or an anchor covering the chain's first link proves where it
// begins. Where nothing proves it, it is sealed on trust only when outside says so (no checkpoint
// exists yet: the first start after the upgrade that made the genesis). Anything else is left as it
// is for `audit verify` to report. A genesis that is sealed already is not touched: moving its
// seal to the active key is `keys rewrap`'s, after it verified the chain.
func (s *Log) SealUnsealedAuditGenesis(ctx context.Context, ver ChainVerifier, outside func() (expects []ChainExpect, onTrust bool, err error)) (GenesisOpening, error) {
	var o GenesisOpening
	var g Genesis
	err := s.db.Snapshot(ctx, func(q *sqltx.Tx) error {
		var err error
		g, err = readGenesis(ctx, q)
		return err
	})
	if err != nil || !g.Found || g.bad != "" || g.keyed || g.MAC != nil {
		return o, err
	}
	o.Unsealed, o.LastUnlinked = true, g.LastUnlinked
	expects, onTrust, err := outside()
	if err != nil {
		return o, err
	}
	rep, err := s.VerifyAuditChain(ctx, ver, expects)
	if err != nil {
		return o, err
	}
	v, err := rep.Verified()
	if err != nil && onTrust {
		if v, err = rep.onTrust(); err == nil {
			o.OnTrust = true
		}
	}
	if err != nil {
		o.Left = err
		return o, nil
	}
	// Sealed now, by this call or by another process's that opened it at the same time.
	_, err = s.SealAuditGenesis(ctx, v)
	o.Sealed = err == nil
	return o, err
}

// AuditKeyNeeds says what of the audit chain still needs each master key other than active: how
// many events are linked under it after the last anchor made under active (a verify without that
// key could not check them), and the key the genesis is sealed under. keys status reads it before
// it calls a key removable.
func (s *Log) AuditKeyNeeds(ctx context.Context, active string) (unanchored map[string]int64, genesisKey string, err error) {
	unanchored = map[string]int64{}
	err = s.db.Snapshot(ctx, func(q *sqltx.Tx) error {
		g, err := readGenesis(ctx, q)
		if err != nil {
			return err
		}
		genesisKey = g.KeyID
		anchors, err := readAnchors(ctx, q)
		if err != nil {
			return err
		}
		var covered int64
		for _, a := range anchors {
			if a.KeyID == active {
				covered = max(covered, a.Covers)
			}
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

// AuditHeadKeys are the key ids a process needs to continue the trail, read without walking it:
// the key of the newest link (no anchor can follow the head to cover it, and a new link follows
// it), as a use of that one link (KeyID empty when no event is linked), and the genesis's seal.
// keys status walks every link instead (AuditKeyUses); a start must not grow with the trail.
func (s *Log) AuditHeadKeys(ctx context.Context) (head KeyUse, genesisKey string, err error) {
	err = s.db.Snapshot(ctx, func(q *sqltx.Tx) error {
		g, err := readGenesis(ctx, q)
		if err != nil {
			return err
		}
		genesisKey = g.KeyID
		err = q.QueryRow(ctx, `SELECT seq, chain_key_id FROM audit_events WHERE chain_key_id IS NOT NULL AND seq IS NOT NULL ORDER BY seq DESC LIMIT 1`).
			Scan(&head.Last, &head.KeyID)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return nil
		case err != nil:
			return fmt.Errorf("store: audit head key: %w", err)
		}
		head.First, head.Links = head.Last, 1
		return nil
	})
	return head, genesisKey, err
}

// KeyUse is how the audit trail uses one key id: the links made under it, from seq First to
// Last.
type KeyUse struct {
	KeyID              string
	Links, First, Last int64
}

// Anchor is an anchor as the trail holds it (its link not checked): the anchor event's seq,
// the key it is linked under, and the events it says it fixes (1 to Covers).
type Anchor struct {
	Seq, Covers int64
	KeyID       string
}

// AuditKeyUses lists every key id the audit trail names (its events' and its genesis's), with the
// anchors that may cover links under keys a ring lacks: keys status names each one the ring lacks.
func (s *Log) AuditKeyUses(ctx context.Context) (uses []KeyUse, anchors []Anchor, genesisKey string, err error) {
	err = s.db.Snapshot(ctx, func(q *sqltx.Tx) error {
		g, err := readGenesis(ctx, q)
		if err != nil {
			return err
		}
		genesisKey = g.KeyID
		if anchors, err = readAnchors(ctx, q); err != nil {
			return err
		}
		r, err := q.Query(ctx, `SELECT chain_key_id, COUNT(*), MIN(seq), MAX(seq) FROM audit_events WHERE chain_key_id IS NOT NULL GROUP BY chain_key_id ORDER BY MIN(seq)`)
		if err != nil {
			return fmt.Errorf("store: audit keys: %w", err)
		}
		defer r.Close()
		for r.Next() {
			var u KeyUse
			if err := r.Scan(&u.KeyID, &u.Links, &u.First, &u.Last); err != nil {
				return fmt.Errorf("store: audit keys: %w", err)
			}
			uses = append(uses, u)
		}
		return r.Err()
	})
	return uses, anchors, genesisKey, err
}
