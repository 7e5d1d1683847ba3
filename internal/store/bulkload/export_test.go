package bulkload

// Hooks for the external tests of this package.

// AddSAMLogIDs puts ids into sam_action_log_ids by the row batch AddSAMLogs uses, in full batches
// only (no short batch ends it), and reports whether the batch copied them (PostgreSQL's COPY).
func (b *Bulk) AddSAMLogIDs(ids [][16]byte) (copied bool, err error) {
	rows, err := b.newRowBatch(`sam_action_log_ids (id, entity_id, action_date)`, 3, samIDBatchRows, len(ids), ErrSAMLogTaken)
	if err != nil {
		return false, err
	}
	defer rows.close()
	for start := 0; start+samIDBatchRows <= len(ids); start += samIDBatchRows {
		args := make([]any, 0, 3*samIDBatchRows)
		for _, id := range ids[start : start+samIDBatchRows] {
			args = append(args, id[:], id[:], int64(0)) // where the log is matters not here
		}
		if err := rows.run(args); err != nil {
			return false, err
		}
	}
	return rows.copy != nil, nil
}

// SAMLogIDBatch is how many ids a full batch of AddSAMLogIDs holds.
const SAMLogIDBatch = samIDBatchRows

// Queued is how many rows the batcher holds, not yet inserted.
func (in *Batcher) Queued() int { return len(in.onSkip) }
